"""From access logs to a policy: the engine of ``urlguard audit --suggest``.

A log says, for every request, what the server answered, to which client
and when. A request the site answered with 2xx or 3xx was *served*: if the
current policy rejects it, the policy may be too strict for the site. But
an attacker writes part of every access log, can be many clients for a few
hours, and a careless handler answers an attack with 200 or a redirect, so
a served request is a claim, not a proof. The engine loosens a rule only on
evidence of use, and never loosens the rules that protect.

One stage per module, in the order they run:

- :mod:`.read`: what one rejected target needs (its *cause*: the settings
  that would admit it), or the rule never loosened that stops it;
- :mod:`.ledger`: the :class:`Ledger`, fed by the auditor a chunk of the
  log at a time, adds each rejected request to one tally (:mod:`.tally`)
  per cause and directory, with who sent it and when, in bounded memory;
- :mod:`.plan`: which prefixes the evidence supports, per cause;
- :mod:`.write`: the TOML text, every line with its evidence, read back
  and checked, and the :class:`Suggestion` (:mod:`.result`) it comes with.

What counts as evidence and how much a change needs is in
:mod:`.evidence`; what is never loosened, whatever the evidence, is in
:mod:`.never`. Nothing here reads a file or prints: the command line feeds
the ledger and writes the text.

    >>> from urlguard import Policy
    >>> from urlguard import InvalidTarget
    >>> slash = InvalidTarget("encoded-slash", "path", 1, 7)  # as the auditor found it
    >>> ledger = Ledger(Policy())
    >>> day = 86_400.0
    >>> for n in range(40):  # 40 visitors from 40 networks over two days
    ...     target = b"/files/a%2Fb" if n % 2 else b"/files/c%2Fd"
    ...     client = b"192.0.%d.7" % n
    ...     ledger.observe(target, 200, 1, slash, {client}, n * day / 20, n * day / 20)
    >>> ledger.count_statuses({200: 40})
    >>> result = suggest(ledger)
    >>> [(c.scope, c.key, c.value) for c in result.changes if c.origin == "suggested"]
    [('/files/', 'encoded_slash', 'keep')]
"""

from __future__ import annotations

from .evidence import COUNTED, SITE_FACTOR, Thresholds, client_key, network_key, status_class
from .ledger import MAX_CAUSES, MAX_FIRST_SEGMENTS, MAX_PREFIXES, Ledger
from .never import LIMIT_BOUNDS, PROTECTED_RULES
from .plan import suggest
from .result import Change, Evidence, Refused, Stopped, Suggestion
from .write import toml_string

__all__ = [
    "COUNTED",
    "LIMIT_BOUNDS",
    "MAX_CAUSES",
    "MAX_FIRST_SEGMENTS",
    "MAX_PREFIXES",
    "PROTECTED_RULES",
    "SITE_FACTOR",
    "Change",
    "Evidence",
    "Ledger",
    "Refused",
    "Stopped",
    "Suggestion",
    "Thresholds",
    "client_key",
    "network_key",
    "status_class",
    "suggest",
    "toml_string",
]
