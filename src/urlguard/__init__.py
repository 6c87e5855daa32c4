"""urlguard: strict validation of the raw request URL, at the edge.

The raw request target is split into path segments and query pairs before
percent-decoding, each piece is decoded as strict UTF-8 and checked against
the application's allowed characters, and the target is either rejected with
one rule code or handed on with its decoded pieces. Nothing is normalized.

    >>> import urlguard
    >>> urlguard.parse_target(b"/caf%C3%A9/x?q=a+b").segments
    ('café', 'x')

The WSGI and ASGI middlewares live in ``urlguard.wsgi`` and ``urlguard.asgi``.
"""

from ._guard.config import Config, config_from_mapping, load_config
from ._url.encode import (
    build_target,
    build_url,
    clean_uri,
    encode_fragment,
    encode_path_segment,
    encode_query_name,
    encode_query_value,
    pretty_uri,
)
from ._url.errors import RULES, InvalidTarget
from ._url.parser import IMPLEMENTATION, parse_target
from ._url.policy import Policy
from ._url.target import Target

__all__ = [
    "IMPLEMENTATION",
    "RULES",
    "Config",
    "InvalidTarget",
    "Policy",
    "Target",
    "build_target",
    "build_url",
    "clean_uri",
    "config_from_mapping",
    "encode_fragment",
    "encode_path_segment",
    "encode_query_name",
    "encode_query_value",
    "load_config",
    "parse_target",
    "pretty_uri",
]

#: The version of this release, the same as the distribution's metadata
#: (``tests/test_repository.py`` checks that they agree).
__version__ = "0.1.0"
