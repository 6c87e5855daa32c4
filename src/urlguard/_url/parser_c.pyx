# cython: language_level=3, binding=False
"""The compiled parser: ``parse_target``, ``parse_split_target`` and ``host_header`` in C.

Same contract as the reference (``urlguard._url.parser_py``), to the byte: the
same verdict, rule, component, index and offset, and the same ``Target``, for
every input under every ``Policy``. The work is done in the reference's
order, in three steps:

1. the rules about the whole target: too-long, fragment, form (an
   absolute-form target's authority is read by the one host grammar,
   ``host.py``, as the reference reads it);
2. one splitter (``_split``) walks the path and then the query once: it
   applies raw-char to every byte and notes the bounds of each segment and
   each query pair, whether it holds an escape, and where its first ``;``
   or ``=`` is. too-many reads the counts;
3. segment by segment, then pair by pair, each piece is decoded into a
   scratch buffer (``_text``) and checked: malformed-escape, encoded-slash,
   encoded-backslash, invalid-utf8, forbidden-char, then the dot, empty,
   drive-letter and double-encoding rules of a segment. A piece of bytes
   allowed raw, with no escape and no ';', needs only the dot rule.

An accepted target (``_Target``) keeps the spans and makes its texts from
them when first read, by the same walk: a request whose handler never
reads the pieces pays for the checks alone.

One error channel: every rejection, whether a rule of the walk or the host
grammar's verdict (Python code, caught where it is called), is written into
the ``Walk``, and the entry raises it once.

Memory safety: ``s`` is the raw target's buffer of ``n`` bytes. Every piece
is a span ``a <= b <= n`` found by the splitter, and every read ``s[j]`` of
a piece is behind ``j < b`` (``j + 2 < b`` before the two digits of an
escape). A piece's decoded bytes go to ``buf + a`` in a scratch buffer of
``n`` bytes: decoding never makes a piece longer, and pieces do not
overlap, so each piece's decoded bytes stay there until the walk ends.
Every other unchecked index has a note beside it, and a case at its edge in
tests/test_parser_c.py (``BOUNDS``); ``tox -e asan`` runs them under
AddressSanitizer.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_FromVoidPtr
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeLatin1
from libc.string cimport memchr, memcmp, memcpy

cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void* PyUnicode_DATA(object text)
    int PyUnicode_KIND(object text)
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value)

from .errors import InvalidTarget
from .host import Host, authority_span, host_text, parse_host, same_authority
from .parser_py import _judged, _policy_of
from .parser_py import _as_bytes as _reference_as_bytes
from .policy import DEFAULT_POLICY
from .target import (
    Target, all_values, describe, equal, first_value, host_of, raw_path_of, raw_query_of,
    rebuild,
)


# --- rule codes and components, in the reference's spelling -----------------------

cdef enum:
    OK, TOO_LONG, TOO_MANY, FRAGMENT, BAD_FORM, RAW_CHAR, MALFORMED_ESCAPE, INVALID_UTF8,
    FORBIDDEN_CHAR, ENCODED_SLASH, ENCODED_BACKSLASH, DOT_SEGMENT, EMPTY_SEGMENT,
    DRIVE_LETTER, DOUBLE_ENCODING, BAD_HOST

cdef tuple _RULES = (
    None, "too-long", "too-many", "fragment", "bad-form", "raw-char", "malformed-escape",
    "invalid-utf8", "forbidden-char", "encoded-slash", "encoded-backslash", "dot-segment",
    "empty-segment", "drive-letter", "double-encoding", "bad-host",
)

cdef enum:
    TARGET, PATH, QUERY, HOST

cdef tuple _COMPONENTS = ("target", "path", "query", "host")

# What the splitter makes of a raw byte: nothing to note, an escape or a '+'
# to decode, the mark whose first place is noted (';' in a segment, '=' in a
# pair), the separator between pieces ('/' or '&'), not allowed raw (raw-char).
cdef enum:  # in this order: the splitter skips every class up to one (see _split)
    PLAIN, ESCAPE, MARK, SEPARATOR, BAD

cdef enum:
    STACK_SPANS = 64  # spans of each kind on the C stack; more go to the heap
    STACK_SCRATCH = 1024  # bytes of scratch on the C stack; longer targets use the heap
    KEPT_POLICIES = 64  # the most policies whose tables are kept (see _rules_for)

# RFC 3986 §2.1: HEXDIG, either case; -1 for any other byte.
cdef signed char _HEX[256]
for _c in range(256):
    _HEX[_c] = int(chr(_c), 16) if chr(_c) in "0123456789abcdefABCDEF" else -1


# --- what a Policy says, as C arrays ------------------------------------------------

cdef class _Rules:
    """What the walk reads from one Policy, derived once."""

    cdef object policy  # Policy
    cdef unsigned char path_class[256]
    cdef unsigned char query_class[256]
    # Decoded ASCII characters allowed (the forbidden-char rule).
    cdef unsigned char path_ascii[128]
    cdef unsigned char query_ascii[128]
    # The allowed code points: sorted, disjoint inclusive intervals [lo0, hi0, lo1, ...].
    cdef unsigned int* path_intervals
    cdef Py_ssize_t path_count
    cdef unsigned int* query_intervals
    cdef Py_ssize_t query_count
    cdef Py_ssize_t max_length, max_segments, max_params
    cdef bint plus, split, reject_slash, reject_backslash, reject_dots, reject_empty
    cdef bint reject_double, keep_slash, keep_backslash
    # Every byte allowed raw (but '%', and '+' when it is a space) is an
    # allowed character: a piece without escapes needs no character check.
    cdef bint path_raw_allowed, query_raw_allowed

    def __dealloc__(self):
        PyMem_Free(self.path_intervals)
        PyMem_Free(self.query_intervals)


cdef unsigned int* _intervals(tuple pairs, Py_ssize_t* count) except NULL:
    # k < len(pairs): 2 * k + 1 < 2 * len(pairs), inside the allocation.
    cdef Py_ssize_t k = 0
    cdef unsigned int* out = <unsigned int*>PyMem_Malloc(sizeof(unsigned int) * 2 * (len(pairs) + 1))
    if out == NULL:
        raise MemoryError()
    for low, high in pairs:
        out[2 * k] = low
        out[2 * k + 1] = high
        k += 1
    count[0] = k
    return out


cdef inline bint _in_intervals(const unsigned int* iv, Py_ssize_t count, unsigned int cp) noexcept:
    # Binary search: lo and hi stay in 0..count, so 2 * mid + 1 < 2 * count.
    cdef Py_ssize_t lo = 0, hi = count, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if cp < iv[2 * mid]:
            hi = mid
        elif cp > iv[2 * mid + 1]:
            lo = mid + 1
        else:
            return True
    return False


cdef _Rules _derive(object policy):
    cdef _Rules r = _Rules.__new__(_Rules)
    cdef bytes path_table = policy._raw_path_table
    cdef bytes query_table = policy._raw_query_table
    cdef const unsigned char* path_raw = path_table
    cdef const unsigned char* query_raw = query_table
    cdef int c
    if len(path_table) != 256 or len(query_table) != 256:  # path_raw[c], c < 256, below
        raise ValueError("a Policy's raw tables hold 256 entries")
    r.policy = policy
    r.path_intervals = _intervals(policy._path_allowed, &r.path_count)
    r.query_intervals = _intervals(policy._query_allowed, &r.query_count)
    r.max_length = policy.max_length
    r.max_segments = policy.max_segments
    r.max_params = policy.max_params
    r.plus = policy.plus_as_space
    r.split = policy.path_params == "split"
    r.reject_slash = policy.encoded_slash == "reject"
    r.reject_backslash = policy.encoded_backslash == "reject"
    r.reject_dots = policy.dot_segment == "reject"
    r.reject_empty = policy.empty_segment == "reject"
    r.reject_double = policy.double_encoding == "reject"
    r.keep_slash = not r.reject_slash
    # A raw '\\' the policy admits separates as a kept %5C does.
    r.keep_backslash = not r.reject_backslash or path_raw[0x5C]
    for c in range(256):
        # '?' ends the path and '#' was refused before the splitter runs.
        # RFC 3986 §2: no byte >= 0x80 is allowed raw, so a piece without an
        # escape is ASCII and indexes the 128-entry ascii tables.
        r.path_class[c] = (
            BAD if c >= 0x80 or not path_raw[c] or c == 0x3F or c == 0x23
            else SEPARATOR if c == 0x2F
            # A raw '\\' that separates parts is looked at like an escape.
            else ESCAPE if c == 0x25 or (c == 0x5C and r.keep_backslash)
            else MARK if c == 0x3B
            else PLAIN
        )
        r.query_class[c] = (
            BAD if c >= 0x80 or not query_raw[c] or c == 0x23
            else SEPARATOR if c == 0x26
            else ESCAPE if c == 0x25 or (c == 0x2B and r.plus)
            else MARK if c == 0x3D
            else PLAIN
        )
    r.path_raw_allowed = r.query_raw_allowed = True
    for c in range(128):
        r.path_ascii[c] = _in_intervals(r.path_intervals, r.path_count, c)
        r.query_ascii[c] = _in_intervals(r.query_intervals, r.query_count, c)
        if r.path_class[c] in (PLAIN, MARK) and not r.path_ascii[c]:
            r.path_raw_allowed = False
        if r.query_class[c] in (PLAIN, MARK) and not r.query_ascii[c]:
            r.query_raw_allowed = False
    return r


cdef _Rules _DEFAULT_RULES = _derive(DEFAULT_POLICY)
cdef object _DEFAULT_POLICY = DEFAULT_POLICY
cdef object _POLICY = type(DEFAULT_POLICY)
# The rules of the other policies in use, by the policy's address. Each entry
# holds its policy (_Rules.policy), so no other object takes that address
# while the entry is there; emptied when full, so a process that makes
# policies without end keeps at most KEPT_POLICIES of them alive.
cdef dict _KEPT = {}
cdef _Rules _last = _DEFAULT_RULES  # the last found there: a route's policy, asked again


cdef _Rules _rules_for(object policy):
    """The policy's rules: the default's and the last one's at once, another's
    found by address, or derived on first use."""
    global _last
    if policy is None or policy is _DEFAULT_POLICY:
        return _DEFAULT_RULES
    if policy is _last.policy:
        return _last
    if type(policy) is not _POLICY:  # a subclass, or the reference's TypeError
        policy = _policy_of(policy)
    key = PyLong_FromVoidPtr(<void*>policy)
    cdef PyObject* kept = PyDict_GetItem(_KEPT, key)  # borrowed; an int key raises nothing
    if kept != NULL and (<_Rules>kept).policy is policy:
        _last = <_Rules>kept
    else:
        if len(_KEPT) >= KEPT_POLICIES:
            _KEPT.clear()
        _last = _KEPT[key] = _derive(policy)
    return _last


# --- the walk's state ---------------------------------------------------------------

cdef struct Span:
    Py_ssize_t a, b  # the piece is s[a:b]
    Py_ssize_t mark  # where its first ';' (segment) or '=' (pair) is; -1: none
    # Its first escape (or '+' read as a space, or raw '\\' that
    # separates), -1: none. A part of it from there on may hold one.
    Py_ssize_t first_escape

cdef struct Walk:
    const unsigned char* s
    Py_ssize_t n
    unsigned char* buf  # scratch: n bytes; piece s[a:b] decodes to buf[a:a + dlen]
    const unsigned char* decoded  # the last piece _text made: its decoded bytes
    Py_ssize_t dlen
    bint build  # make the texts (the second pass), or only check (the first)
    int rule, component
    Py_ssize_t index, offset  # index -1: None


cdef inline object _fail(Walk* w, int rule, int component, Py_ssize_t index, Py_ssize_t offset):
    """The rule broken, written into the walk; None, the walk's "rejected"."""
    w.rule = rule
    w.component = component
    w.index = index
    w.offset = offset
    return None


cdef object _error(Walk* w):
    # Its fields are its args, which BaseException.__new__ sets: no __init__ to run.
    return InvalidTarget.__new__(
        InvalidTarget, _RULES[w.rule], _COMPONENTS[w.component], None if w.index < 0 else w.index,
        w.offset,
    )


# --- the splitter ---------------------------------------------------------------------

cdef Py_ssize_t _split(Walk* w, const unsigned char* kind, Py_ssize_t start, Py_ssize_t end,
                       bint keep_empty, int component, Span* spans, Py_ssize_t room) noexcept:
    """Split s[start:end] at each SEPARATOR byte into spans (empty pieces
    only when ``keep_empty``), noting the first room of them; the number of
    pieces, or -1 with raw-char at the first byte not allowed raw (its index:
    the pieces before it). ``start <= end <= n``: ``s[i]`` is read for
    ``i < end`` only."""
    cdef const unsigned char* s = w.s
    cdef Py_ssize_t count = 0, a = start, mark = -1, i = start
    cdef Py_ssize_t first_escape = -1
    # What the inner loop skips: PLAIN, and ESCAPE too once the piece's first
    # is noted, so that text full of escapes is walked without a stop at each.
    cdef unsigned char skip = PLAIN, k
    while True:
        while i < end and kind[s[i]] <= skip:
            i += 1
        k = SEPARATOR if i == end else kind[s[i]]
        if k == SEPARATOR:
            if keep_empty or i > a:
                if count < room:
                    spans[count].a = a
                    spans[count].b = i
                    spans[count].mark = mark
                    spans[count].first_escape = first_escape
                count += 1
            if i == end:
                return count
            a = i + 1
            mark = -1
            first_escape = -1
            skip = PLAIN
        elif k == BAD:
            _fail(w, RAW_CHAR, component, count, i)
            return -1
        elif k == ESCAPE:  # the first: the others are skipped
            first_escape = i
            skip = ESCAPE
        elif mark < 0:  # MARK
            mark = i
        i += 1


# --- one piece: decode, check, make its text ----------------------------------------

cdef inline Py_ssize_t _raw_offset(const unsigned char* s, Py_ssize_t a, Py_ssize_t k) noexcept:
    """Where decoded byte k of the piece starting at a comes from. k is less
    than the piece's decoded length: each step passes one decoded byte's
    raw bytes, so s[j] is read inside the piece."""
    cdef Py_ssize_t j = a
    while k > 0:
        j += 3 if s[j] == 0x25 else 1
        k -= 1
    return j


cdef Py_ssize_t _check_utf8(const unsigned char* d, Py_ssize_t m, const unsigned char* ascii,
                            const unsigned int* iv, Py_ssize_t count, Py_ssize_t* forbidden) noexcept:
    """Where d[:m] stops being UTF-8 (RFC 3629 §4: no overlong form, no
    surrogate, nothing past U+10FFFF), as the start of the sequence that
    CPython's strict decoder reports; -1 when it is UTF-8 throughout. Then
    the first character outside the allowed set goes to ``forbidden`` (-1:
    none; kept in a local until then: d may alias it).
    ``k + need < m`` guards every continuation byte read."""
    cdef Py_ssize_t k = 0, need, first = -1
    cdef unsigned int cp
    cdef unsigned char c, low, high
    while k < m:
        c = d[k]
        if c < 0x80:  # ascii has 128 entries
            if not ascii[c] and first < 0:
                first = k
            k += 1
            continue
        low, high = 0x80, 0xBF  # the second byte's range, by lead byte
        if 0xC2 <= c <= 0xDF:
            need, cp = 1, c & 0x1F
        elif 0xE0 <= c <= 0xEF:
            need, cp = 2, c & 0x0F
            if c == 0xE0:
                low = 0xA0  # overlong
            elif c == 0xED:
                high = 0x9F  # surrogates
        elif 0xF0 <= c <= 0xF4:
            need, cp = 3, c & 0x07
            if c == 0xF0:
                low = 0x90  # overlong
            elif c == 0xF4:
                high = 0x8F  # past U+10FFFF
        else:
            return k
        if k + need >= m or not low <= d[k + 1] <= high:
            return k
        cp = (cp << 6) | (d[k + 1] & 0x3F)
        if need >= 2:
            if not 0x80 <= d[k + 2] <= 0xBF:
                return k
            cp = (cp << 6) | (d[k + 2] & 0x3F)
        if need == 3:
            if not 0x80 <= d[k + 3] <= 0xBF:
                return k
            cp = (cp << 6) | (d[k + 3] & 0x3F)
        if first < 0 and not _in_intervals(iv, count, cp):
            first = k
        k += need + 1
    forbidden[0] = first
    return -1


cdef object _utf8_text(const unsigned char* d, Py_ssize_t m):
    """Text from d[:m], UTF-8 checked already, made at its final size and
    kind (CPython's decoder grows a buffer, slow on short text). Its size is
    its number of characters (the bytes that do not continue one, RFC 3629
    §3), its kind that of a code point as wide as its widest, which the
    largest lead byte tells (0xC2-0xC3: at most U+00FF, below 0xF0: at most
    U+FFFF). Counted here, once: the check counted nothing."""
    cdef Py_ssize_t k, i = 0, chars = 0
    cdef unsigned char c, top = 0
    cdef unsigned int cp
    for k in range(m):
        chars += (d[k] & 0xC0) != 0x80
        if d[k] > top:
            top = d[k]
    if top < 0x80:
        return _ascii(d, m)
    text = PyUnicode_New(chars, 0xFF if top <= 0xC3 else 0xFFFF if top < 0xF0 else 0x10FFFF)
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    k = 0
    while k < m:  # every sequence is whole: k + 3 < m where a 4-byte one starts
        c = d[k]
        if c < 0x80:
            cp = c
            k += 1
        elif c < 0xE0:
            cp = ((c & 0x1F) << 6) | (d[k + 1] & 0x3F)
            k += 2
        elif c < 0xF0:
            cp = ((c & 0x0F) << 12) | ((d[k + 1] & 0x3F) << 6) | (d[k + 2] & 0x3F)
            k += 3
        else:
            cp = ((c & 0x07) << 18) | ((d[k + 1] & 0x3F) << 12) | ((d[k + 2] & 0x3F) << 6) | (d[k + 3] & 0x3F)
            k += 4
        PyUnicode_WRITE(kind, data, i, cp)  # i < chars: one per lead byte
        i += 1
    return text


cdef object _ascii(const unsigned char* p, Py_ssize_t n):
    """ASCII bytes as text: CPython's shared one-character strings, else a
    new compact ASCII string filled by one copy."""
    if n <= 1:
        return PyUnicode_DecodeLatin1(<const char*>p, n, NULL)
    text = PyUnicode_New(n, 127)
    memcpy(PyUnicode_DATA(text), p, n)
    return text


cdef inline bint _escaped(const Span* span, Py_ssize_t a, Py_ssize_t b) noexcept:
    """Whether s[a:b], inside the span, may hold one of its escapes."""
    return span.first_escape >= 0 and span.first_escape < b


cdef object _text(Walk* w, _Rules r, Py_ssize_t a, Py_ssize_t b, int component,
                  Py_ssize_t index, bint escaped):
    """The piece s[a:b] decoded and checked (``escaped``: it may hold an
    escape or a '+' to read as a space), its decoded bytes at w.decoded:
    its text when ``w.build``, else True; None with the rule in ``w`` when
    it breaks one, in the reference's order."""
    cdef const unsigned char* s = w.s
    cdef const unsigned char* ascii = r.path_ascii
    cdef unsigned char* d
    cdef Py_ssize_t j, m = 0, slash = -1, backslash = -1, bad, forbidden
    cdef bint plus
    cdef int high, low
    cdef unsigned char c
    if component == QUERY:
        ascii = r.query_ascii
    if not escaped:  # bytes allowed raw are ASCII (_derive): the text is the bytes
        if not (r.query_raw_allowed if component == QUERY else r.path_raw_allowed):
            for j in range(a, b):
                if not ascii[s[j]]:  # s[j] < 0x80: the splitter passed it
                    return _fail(w, FORBIDDEN_CHAR, component, index, j)
        w.decoded = s + a
        w.dlen = b - a
        return _ascii(s + a, b - a) if w.build else True
    d = w.buf + a
    plus = component == QUERY and r.plus  # a local: the writes to d may alias r
    j = a
    while j < b:
        c = s[j]
        if c == 0x25:
            if j + 2 >= b:
                return _fail(w, MALFORMED_ESCAPE, component, index, j)
            high = _HEX[s[j + 1]]
            low = _HEX[s[j + 2]]
            if high < 0 or low < 0:
                return _fail(w, MALFORMED_ESCAPE, component, index, j)
            c = <unsigned char>(high * 16 + low)
            if c == 0x2F and slash < 0:
                slash = j
            elif c == 0x5C and backslash < 0:
                backslash = j
            j += 3
        else:
            if c == 0x2B and plus:
                c = 0x20  # form semantics: '+' is a space, %2B stays '+'
            j += 1
        d[m] = c  # m < j - a <= b - a: a + m < b <= n, the scratch's size
        m += 1
    if component != QUERY:
        if slash >= 0 and r.reject_slash:
            return _fail(w, ENCODED_SLASH, component, index, slash)
        if backslash >= 0 and r.reject_backslash:
            return _fail(w, ENCODED_BACKSLASH, component, index, backslash)
    w.decoded = d
    w.dlen = m
    if w.build:  # checked when the target was
        return _utf8_text(d, m)
    if component == QUERY:
        bad = _check_utf8(d, m, ascii, r.query_intervals, r.query_count, &forbidden)
    else:
        bad = _check_utf8(d, m, ascii, r.path_intervals, r.path_count, &forbidden)
    if bad >= 0:
        return _fail(w, INVALID_UTF8, component, index, _raw_offset(s, a, bad))
    if forbidden >= 0:
        return _fail(w, FORBIDDEN_CHAR, component, index, _raw_offset(s, a, forbidden))
    return True


# --- the rules of a segment ------------------------------------------------------------

cdef inline bint _is_dots(const unsigned char* d, Py_ssize_t m) noexcept:
    # d[0] is read when m >= 1, d[1] when m == 2.
    return (m == 1 and d[0] == 0x2E) or (m == 2 and d[0] == 0x2E and d[1] == 0x2E)


cdef bint _has_escape(const unsigned char* d, Py_ssize_t m) noexcept:
    """Whether decoded bytes hold '%' and two hex digits: %25XX sent, so a
    second decoding would read an escape (double-encoding)."""
    cdef Py_ssize_t k
    for k in range(m - 2):  # k + 2 < m; none when m < 3
        if d[k] == 0x25 and _HEX[d[k + 1]] >= 0 and _HEX[d[k + 2]] >= 0:
            return True
    return False


cdef inline Py_ssize_t _before(const unsigned char* d, Py_ssize_t start, Py_ssize_t end,
                               unsigned char byte) noexcept:
    """Where the first ``byte`` in d[start:end] is, or ``end``."""
    cdef const unsigned char* found = <const unsigned char*>memchr(d + start, byte, end - start)
    return end if found == NULL else found - d


cdef bint _raw_dots(const unsigned char* s, Py_ssize_t a, Py_ssize_t e) noexcept:
    """Whether s[a:e] decodes to '.' or '..' (its escapes were checked)."""
    cdef Py_ssize_t j = a, dots = 0
    while j < e:
        if s[j] == 0x2E:
            j += 1
        elif s[j] == 0x25 and j + 2 < e and s[j + 1] == 0x32 and (s[j + 2] | 0x20) == 0x65:
            j += 3
        else:
            return False
        dots += 1
    return dots == 1 or dots == 2


cdef enum:  # what _kept_parts finds
    KEPT_DOT = 1, KEPT_EMPTY = 2, KEPT_DRIVE = 4


cdef int _kept_parts(_Rules r, const unsigned char* d, Py_ssize_t m) noexcept:
    """Of decoded text d[:m], the parts between the separators the policy
    keeps (a kept %2F's '/', a kept %5C's or an admitted raw '\\'): 0 when
    there is no separator; else KEPT_DOT when a part, or its text before a
    ';', is '.' or '..', KEPT_EMPTY when a part but the last is empty, and
    KEPT_DRIVE when the first is a Windows drive (one ASCII letter, ':')."""
    cdef Py_ssize_t k, part = 0, first_end = -1
    cdef int found = 0
    for k in range(m + 1):
        if k == m or (d[k] == 0x2F and r.keep_slash) or (d[k] == 0x5C and r.keep_backslash):
            if first_end < 0:
                if k == m:
                    return 0  # one part: the text is no more than itself
                first_end = k
            if _is_dots(d + part, _before(d, part, k, 0x3B) - part):
                found |= KEPT_DOT
            if k == part and k < m:
                found |= KEPT_EMPTY
            part = k + 1
    # first_end == 2 is a separator's place, so m >= 3: d[0] and d[1] are read.
    if first_end == 2 and 0x61 <= (d[0] | 0x20) <= 0x7A and d[1] == 0x3A:
        found |= KEPT_DRIVE
    return found


cdef object _segment(Walk* w, _Rules r, Span* span, Py_ssize_t index, bint last, list params):
    """One segment checked: its text when ``w.build`` (its matrix parameters
    appended to ``params`` under "split"), else True; None with the rule in ``w``."""
    cdef const unsigned char* s = w.s
    cdef const unsigned char* d
    cdef Py_ssize_t a = span.a, b = span.b, name_end, m, j, e, eq
    cdef bint double = False, keeps = r.keep_slash or r.keep_backslash
    cdef int kept = 0
    if a == b:
        if not last and r.reject_empty:
            return _fail(w, EMPTY_SEGMENT, PATH, index, a)
        if params is not None:
            params.append(())
        return ""
    name_end = span.mark if r.split and span.mark >= 0 else b
    name = _text(w, r, a, name_end, PATH, index, _escaped(span, a, name_end))
    if name is None:
        return None
    d, m = w.decoded, w.dlen
    if span.first_escape >= 0 and r.reject_double and not w.build:
        double = _has_escape(d, m)
    if keeps and not w.build:
        kept = _kept_parts(r, d, m)
    if r.split:
        # RFC 3986 §3.3: the ';' pieces after the name, each key[=value].
        pairs = []
        j = name_end + 1
        while j <= b:
            ended = <const unsigned char*>memchr(s + j, 0x3B, b - j) if j < b else NULL
            e = b if ended == NULL else ended - s
            if e > j:
                ended = <const unsigned char*>memchr(s + j, 0x3D, e - j)
                eq = e if ended == NULL else ended - s
                key = _text(w, r, j, eq, PATH, index, _escaped(span, j, eq))
                if key is None:
                    return None
                double = double or (r.reject_double and _has_escape(w.decoded, w.dlen))
                if keeps and not w.build:
                    kept |= _kept_parts(r, w.decoded, w.dlen)
                value = ""
                if eq < e:
                    value = _text(w, r, eq + 1, e, PATH, index, _escaped(span, eq + 1, e))
                    if value is None:
                        return None
                    double = double or (r.reject_double and _has_escape(w.decoded, w.dlen))
                    if keeps and not w.build:
                        kept |= _kept_parts(r, w.decoded, w.dlen)
                if params is not None:
                    pairs.append((key, value))
            j = e + 1
        if params is not None:
            params.append(tuple(pairs))
    if w.build:
        return name  # the rules below held when the target was checked
    # The real segment, which the dot_segment and empty_segment switches
    # govern. "..;x" is ".." to servlet containers, which strip path
    # parameters before resolving dot segments (Tomcat's "..;/" behind a
    # proxy), and "/;/admin" is "//admin" to them: the whole segment counts,
    # and so does its part before the first raw ';'. Then the parts a kept
    # separator makes (_kept_parts), whatever the switches.
    if (kept & KEPT_DOT) or (
        r.reject_dots and (_is_dots(d, m) or (span.mark >= 0 and _raw_dots(s, a, span.mark)))
    ):
        return _fail(w, DOT_SEGMENT, PATH, index, a)
    # s[a]: a < b here, the empty segment returned above.
    if (kept & KEPT_EMPTY) or (r.reject_empty and not last and s[a] == 0x3B):
        return _fail(w, EMPTY_SEGMENT, PATH, index, a)
    if kept & KEPT_DRIVE:
        return _fail(w, DRIVE_LETTER, PATH, index, a)
    if double:
        return _fail(w, DOUBLE_ENCODING, PATH, index, a)
    return name


cdef object _pair(Walk* w, _Rules r, Span* span, Py_ssize_t index):
    """One query pair checked, split at its first '=' before decoding: the
    pair of texts when ``w.build``, else True; None with the rule in ``w``."""
    cdef Py_ssize_t eq = span.b if span.mark < 0 else span.mark
    name = _text(w, r, span.a, eq, QUERY, index, _escaped(span, span.a, eq))
    if name is None:
        return None
    value = ""
    if eq < span.b:
        value = _text(w, r, eq + 1, span.b, QUERY, index, _escaped(span, eq + 1, span.b))
        if value is None:
            return None
    return (name, value) if w.build else True


# --- the result -------------------------------------------------------------------------

@cython.final
@cython.freelist(8)
cdef class _Target:
    """A ``urlguard.Target`` made by this parser: the same attributes and
    behaviour, as a C type registered as a virtual subclass of ``Target``
    (a copy or a pickle of it is a plain ``Target``).

    The checks have run on the spans the splitter found; the texts are made
    from those spans when first read, so a request whose handler never reads
    them pays for the checks alone. The spans are kept until the target goes.
    """

    cdef readonly bytes raw
    cdef readonly object authority
    cdef readonly object _host  # the Host given, else the authority's (see Target.host)
    cdef _Rules rules
    cdef Span* spans  # the segments', then the pairs'
    cdef Py_ssize_t nseg, npair
    cdef tuple made_segments, made_query, made_params  # None: not made yet

    def __dealloc__(self):
        PyMem_Free(self.spans)

    @property
    def segments(self):
        if self.made_segments is None:
            self._make()
        return self.made_segments

    @property
    def query(self):
        if self.made_segments is None:
            self._make()
        return self.made_query

    @property
    def params(self):
        if self.made_segments is None:
            self._make()
        if self.made_params is None:
            return ((),) * self.nseg
        return self.made_params

    @property
    def host(self):
        return host_of(self._host, self.authority).name

    @property
    def port(self):
        return host_of(self._host, self.authority).port

    @property
    def raw_path(self):
        return raw_path_of(self.raw)

    @property
    def raw_query(self):
        return raw_query_of(self.raw)

    def get(self, name, default=None):
        return first_value(self.query, name, default)

    def get_all(self, name):
        return all_values(self.query, name)

    def __eq__(self, other):
        return equal(self, other)

    def __hash__(self):
        return hash(self.raw)

    def __repr__(self):
        return describe(self)

    def __reduce__(self):
        params = self.params if self.rules.split else None
        host = (self.host, self.port) if self._host is not None else None
        return rebuild, (self.raw, self.segments, self.query, params, self.authority, host)

    cdef int _make(self) except -1:
        """The texts, from the spans: the same walk over each piece, its
        checks passed already, now making the texts."""
        cdef Walk w
        cdef unsigned char scratch[STACK_SCRATCH]
        cdef Py_ssize_t k
        if self.spans == NULL:  # made from Python (type(t).__new__), not by the parser
            raise TypeError("this target was not made by urlguard's parser")
        w.s = <const unsigned char*>PyBytes_AS_STRING(self.raw)
        w.n = PyBytes_GET_SIZE(self.raw)
        w.rule = OK
        w.build = True
        w.buf = scratch
        if w.n > STACK_SCRATCH:
            w.buf = <unsigned char*>PyMem_Malloc(w.n)
        if w.buf == NULL:
            raise MemoryError()
        params = [] if self.rules.split else None
        segments = PyTuple_New(self.nseg)
        query = PyTuple_New(self.npair)
        try:
            for k in range(self.nseg):
                text = _segment(&w, self.rules, &self.spans[k], k, k == self.nseg - 1, params)
                if text is None:
                    break
                Py_INCREF(text)
                PyTuple_SET_ITEM(segments, k, text)
            for k in range(self.npair if w.rule == OK else 0):
                pair = _pair(&w, self.rules, &self.spans[self.nseg + k], k)
                if pair is None:
                    break
                Py_INCREF(pair)
                PyTuple_SET_ITEM(query, k, pair)
        finally:
            if w.buf != scratch:
                PyMem_Free(w.buf)
        if w.rule != OK:  # cannot happen: the same checks passed on the same bytes
            raise SystemError(f"urlguard: an accepted target now breaks {_RULES[w.rule]}")
        self.made_query = query
        self.made_params = None if params is None else tuple(params)
        self.made_segments = segments
        return 0


Target.register(_Target)


cdef object _new_target(bytes raw, _Rules r, object authority, object host,
                        const Span* segments, Py_ssize_t nseg, const Span* pairs, Py_ssize_t npair):
    # nseg <= max_segments and npair <= max_params (too-many passed), each at
    # most n: below their room, so every span copied was noted.
    cdef _Target target = _Target.__new__(_Target)
    target.spans = <Span*>PyMem_Malloc((nseg + npair) * sizeof(Span))
    if target.spans == NULL:
        raise MemoryError()
    memcpy(target.spans, segments, nseg * sizeof(Span))
    memcpy(target.spans + nseg, pairs, npair * sizeof(Span))
    target.nseg = nseg
    target.npair = npair
    target.raw = raw
    target.rules = r
    target.authority = authority
    target._host = host
    return target


# --- the walk ---------------------------------------------------------------------------

cdef object _walk(Walk* w, _Rules r, bytes raw, object host, Span* segments,
                  Py_ssize_t segment_room, Span* pairs, Py_ssize_t pair_room):
    cdef const unsigned char* s = w.s
    cdef Py_ssize_t n = w.n, path_start = 0, path_end, nseg, npair = 0, k
    cdef const unsigned char* found
    cdef Span* span
    authority = judged = None
    found = <const unsigned char*>memchr(s, 0x23, n)
    if found != NULL:  # RFC 9110 §7.1: a fragment is never sent
        return _fail(w, FRAGMENT, TARGET, -1, found - s)
    if n == 0 or s[0] != 0x2F:
        bounds = authority_span(raw)  # RFC 9112 §3.2.2: http(s) absolute-form
        if bounds is None:
            return _fail(w, BAD_FORM, TARGET, -1, 0)
        authority_start, path_start = bounds
        try:
            judged = parse_host(raw[authority_start:path_start], "target")
        except InvalidTarget as error:  # the host grammar's verdict on the authority
            return _fail(w, BAD_HOST, TARGET, -1, authority_start + error.offset)
        authority = host_text(judged)
    found = <const unsigned char*>memchr(s + path_start, 0x3F, n - path_start)
    path_end = n if found == NULL else found - s

    # raw-char over the path, then the query, noting every piece's bounds.
    if path_start < path_end:  # s[path_start] is '/'
        nseg = _split(w, r.path_class, path_start + 1, path_end, True, PATH, segments, segment_room)
        if nseg < 0:
            return None
    else:  # RFC 9112 §3.2.2: an absolute-form target's empty path is "/"
        nseg = 1  # segments[0]: the room is at least one
        segments[0].a = segments[0].b = path_start
        segments[0].mark = -1
        segments[0].first_escape = -1
    if found != NULL:
        npair = _split(w, r.query_class, path_end + 1, n, False, QUERY, pairs, pair_room)
        if npair < 0:
            return None
    # A path of n bytes has at most n segments, a query at most n pairs: so
    # max_segments < nseg <= n, and the room, min(n, max_segments) + 1, is
    # more than max_segments; the same for the pairs.
    if nseg > r.max_segments:
        return _fail(w, TOO_MANY, PATH, r.max_segments, segments[r.max_segments].a - 1)
    if npair > r.max_params:
        return _fail(w, TOO_MANY, QUERY, r.max_params, pairs[r.max_params].a)

    # Segment by segment, then pair by pair. A piece of bytes allowed raw,
    # without an escape or a ';', is text as it stands under a policy that
    # allows every such character: of its segment's rules only the dots are
    # left to check, and of a pair's none.
    for k in range(nseg):
        span = &segments[k]
        if span.first_escape >= 0 or span.mark >= 0 or span.a == span.b or not r.path_raw_allowed:
            if _segment(w, r, span, k, k == nseg - 1, None) is None:
                return None
        elif r.reject_dots and _is_dots(s + span.a, span.b - span.a):
            return _fail(w, DOT_SEGMENT, PATH, k, span.a)
    for k in range(npair):
        if pairs[k].first_escape >= 0 or not r.query_raw_allowed:
            if _pair(w, r, &pairs[k], k) is None:
                return None
    if judged is not None:  # the Host the authority names, judged once and kept
        if host is None:
            host = judged
        elif not same_authority(raw, judged, host):  # RFC 9112 §3.2.2
            return _fail(w, BAD_HOST, HOST, -1, 0)
    return _new_target(raw, r, authority, host, segments, nseg, pairs, npair)


cdef object _parse(Walk* w, bytes raw, _Rules r, object host):
    """The target ``raw`` checked, or None with the rule it breaks in ``w``
    (the entry raises it); ``host`` the Host given, as bytes, str or a Host."""
    cdef Span segment_stack[STACK_SPANS]
    cdef Span pair_stack[STACK_SPANS]
    cdef unsigned char scratch[STACK_SCRATCH]
    cdef Span* segments = segment_stack
    cdef Span* pairs = pair_stack
    # A path of n bytes has at most n segments, a query at most n pairs; one
    # more than the limit is noted, for too-many's offset.
    cdef Py_ssize_t n = PyBytes_GET_SIZE(raw)
    cdef Py_ssize_t segment_room = min(n, r.max_segments) + 1
    cdef Py_ssize_t pair_room = min(n, r.max_params) + 1
    w.rule = OK
    if host is not None and type(host) is not Host:
        try:
            host = _judged(host)  # a TypeError is the caller's, and passes
        except InvalidTarget as error:  # the host grammar's bad-host
            return _fail(w, BAD_HOST, HOST, -1, error.offset)
    if n > r.max_length:
        return _fail(w, TOO_LONG, TARGET, -1, r.max_length)
    w.s = <const unsigned char*>PyBytes_AS_STRING(raw)
    w.n = n
    w.build = False
    w.buf = scratch
    try:
        if n > STACK_SCRATCH:
            w.buf = <unsigned char*>PyMem_Malloc(n)
        if segment_room > STACK_SPANS:
            segments = <Span*>PyMem_Malloc(segment_room * sizeof(Span))
        if pair_room > STACK_SPANS:
            pairs = <Span*>PyMem_Malloc(pair_room * sizeof(Span))
        if w.buf == NULL or segments == NULL or pairs == NULL:
            raise MemoryError()
        target = _walk(w, r, raw, host, segments, segment_room, pairs, pair_room)
    finally:
        if w.buf != scratch:
            PyMem_Free(w.buf)
        if segments != segment_stack:
            PyMem_Free(segments)
        if pairs != pair_stack:
            PyMem_Free(pairs)
    if w.rule != OK:
        return None
    return target


# --- the entries ------------------------------------------------------------------------

cdef bytes _as_bytes(object raw):
    # Bytes, nearly always; the reference turns anything else into bytes or
    # raises its TypeError.
    if type(raw) is bytes:
        return raw
    return _reference_as_bytes(raw)


def parse_target(raw, policy=None, host=None):
    """``urlguard._url.parser_py.parse_target``, compiled: the same answer on every input."""
    cdef Walk w
    target = _parse(&w, _as_bytes(raw), _rules_for(policy), host)
    if target is None:
        raise _error(&w)
    return target


def parse_split_target(raw_path, query, policy, host=None):
    """``urlguard._url.parser_py.parse_split_target``, compiled."""
    cdef Walk w
    cdef bytes path = _as_bytes(raw_path)
    cdef bytes rest = _as_bytes(query)
    cdef _Rules r = _rules_for(policy)
    cdef bytes raw = path
    cdef Py_ssize_t size = PyBytes_GET_SIZE(path)
    cdef char* into
    if rest:  # raw_path + b"?" + query, in one allocation
        raw = PyBytes_FromStringAndSize(NULL, size + 1 + PyBytes_GET_SIZE(rest))
        into = PyBytes_AS_STRING(raw)
        memcpy(into, PyBytes_AS_STRING(path), size)
        into[size] = 0x3F  # '?': the allocation holds size + 1 + len(rest) bytes
        memcpy(into + size + 1, PyBytes_AS_STRING(rest), PyBytes_GET_SIZE(rest))
    target = _parse(&w, raw, r, host)
    if target is None:
        raise _error(&w)
    return target


def host_header(headers, dict known not None):
    """``urlguard._url.parser_py.host_header``, compiled."""
    cdef Py_ssize_t k
    cdef object pair, name
    cdef bint seen = False
    cdef PyObject* judged
    found = None
    if type(headers) is not list:
        return None
    for k in range(PyList_GET_SIZE(headers)):
        pair = <object>PyList_GET_ITEM(headers, k)
        if type(pair) is not tuple or PyTuple_GET_SIZE(pair) != 2:
            return None
        name = <object>PyTuple_GET_ITEM(pair, 0)
        if type(name) is not bytes:
            return None
        if PyBytes_GET_SIZE(name) == 4 and memcmp(PyBytes_AS_STRING(name), b"host", 4) == 0:
            if seen:
                return None
            found = <object>PyTuple_GET_ITEM(pair, 1)
            seen = True
    if type(found) is not bytes or PyBytes_GET_SIZE(found) == 0:
        return None
    judged = PyDict_GetItem(known, found)  # borrowed; bytes hash and compare raise nothing
    if judged != NULL:
        return <object>judged
    return found
