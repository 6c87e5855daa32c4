# cython: language_level=3, freethreading_compatible=False
"""The compiled parser: ``parse_target`` and ``parse_split_target`` in C.

Same contract as the reference (``urlguard._parser_py``), to the byte: the
same verdict, rule, component, index and offset, and the same ``Target``, for
every input under every ``Policy``. The rules are applied in the reference's
order, in one pass over the raw bytes for the whole-target rules (too-long,
fragment, form, raw-char, too-many) and one pass over each segment and query
pair; nothing here is a second opinion, only the same reading done in C.

A violation is written into an ``Err`` struct and the walk returns; the
``InvalidTarget`` is raised once, at the entry (raising through several
Cython frames costs about as much as the whole parse of a plain target).

Memory safety: every walk below reads ``s[i]`` only behind an explicit
``i < end`` (or ``i + 2 < end`` for the two digits of an escape), where
``end`` never exceeds the length of the bytes object; the comments at each
walk say which bound holds. Decoded bytes go to a scratch buffer as long as
the whole target (decoding never makes a piece longer). The tests in
tests/test_parser_c.py put a piece and an escape at the very end of the
buffer, and ``tox -e asan`` runs them under AddressSanitizer.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.string cimport memchr, memset

from ._errors import InvalidTarget
from ._policy import DEFAULT_POLICY
from . import _grammar
from . import _policy
from . import _target

cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    object PyUnicode_DecodeASCII(const char *s, Py_ssize_t size, const char *errors)

# --- rule codes, in the reference's spelling -------------------------------------

cdef enum:
    R_TOO_LONG, R_TOO_MANY, R_FRAGMENT, R_BAD_FORM, R_RAW_CHAR, R_MALFORMED
    R_INVALID_UTF8, R_FORBIDDEN, R_ENCODED_SLASH, R_ENCODED_BACKSLASH, R_DOT
    R_EMPTY, R_DOUBLE

cdef tuple _RULES = (
    "too-long", "too-many", "fragment", "bad-form", "raw-char", "malformed-escape",
    "invalid-utf8", "forbidden-char", "encoded-slash", "encoded-backslash", "dot-segment",
    "empty-segment", "double-encoding",
)

cdef enum:
    C_TARGET, C_PATH, C_QUERY

cdef tuple _COMPONENTS = ("target", "path", "query")

cdef struct Err:
    int rule
    int component
    Py_ssize_t index  # -1: None (a rule about the whole target)
    Py_ssize_t offset


cdef inline int _fail(Err* err, int rule, int component, Py_ssize_t index, Py_ssize_t offset):
    err.rule = rule
    err.component = component
    err.index = index
    err.offset = offset
    return -1


cdef object _error(Err* err):
    index = None if err.index < 0 else err.index
    return InvalidTarget(_RULES[err.rule], _COMPONENTS[err.component], index, err.offset)


# --- byte classes -----------------------------------------------------------------

# RFC 3986 §2.1: HEXDIG, either case; -1 for every other byte.
cdef signed char _HEX[256]
for _c in range(256):
    _HEX[_c] = int(chr(_c), 16) if _c in _grammar.HEXDIG else -1

# RFC 3986 §3.2.2 reg-name = *( unreserved / pct-encoded / sub-delims )
cdef unsigned char _REG_NAME[256]
memset(_REG_NAME, 0, 256)
for _c in _grammar.REG_NAME:
    _REG_NAME[_c] = 1
# IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
cdef unsigned char _FUTURE[256]
memset(_FUTURE, 0, 256)
for _c in _grammar.REG_NAME | {ord(":")}:
    _FUTURE[_c] = 1
# The IPv6address of an IP-literal, by shape only: HEXDIG, ':' and '.' (IPv4 tail).
cdef unsigned char _IPV6[256]
memset(_IPV6, 0, 256)
for _c in _grammar.HEXDIG | {ord(":"), ord(".")}:
    _IPV6[_c] = 1
# What a decoded host may not contain (RFC 3986 §3.2.2: they delimit the authority).
cdef unsigned char _HOST_DELIMS[128]
memset(_HOST_DELIMS, 0, 128)
for _c in map(ord, "@?#[]%:"):
    _HOST_DELIMS[_c] = 1


# --- per-policy tables ------------------------------------------------------------

cdef class _Tables:
    """What the walk reads from a Policy, as C arrays and flags."""

    cdef object policy
    cdef unsigned char path_raw[256]
    cdef unsigned char query_raw[256]
    # Decoded ASCII characters allowed (the forbidden-char rule), per component.
    cdef unsigned char path_ascii[128]
    cdef unsigned char query_ascii[128]
    # The allowed code points as sorted inclusive intervals [lo0, hi0, lo1, ...].
    cdef unsigned int* path_iv
    cdef Py_ssize_t path_iv_n
    cdef unsigned int* query_iv
    cdef Py_ssize_t query_iv_n
    # Every byte allowed raw in the component decodes to an allowed character.
    cdef bint path_raw_clean
    cdef bint query_raw_clean
    cdef Py_ssize_t max_length, max_segments, max_params
    cdef bint reject_slash, reject_backslash, reject_dots, reject_empty, reject_double
    cdef bint split, plus

    def __dealloc__(self):
        PyMem_Free(self.path_iv)
        PyMem_Free(self.query_iv)


cdef unsigned int* _intervals(object pairs, Py_ssize_t* count) except NULL:
    cdef Py_ssize_t n = len(pairs), k = 0
    cdef unsigned int* out = <unsigned int*>PyMem_Malloc(sizeof(unsigned int) * 2 * (n + 1))
    if out == NULL:
        raise MemoryError()
    for low, high in pairs:
        out[2 * k] = low
        out[2 * k + 1] = high
        k += 1
    count[0] = n
    return out


cdef inline bint _in_intervals(const unsigned int* iv, Py_ssize_t n, unsigned int cp) noexcept:
    # Binary search over n sorted, disjoint intervals: lo and hi stay in 0..n.
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if cp < iv[2 * mid]:
            hi = mid
        elif cp > iv[2 * mid + 1]:
            lo = mid + 1
        else:
            return True
    return False


cdef _Tables _build_tables(object policy):
    cdef _Tables t = _Tables.__new__(_Tables)
    cdef int c
    t.policy = policy
    path_table = _policy_path_table(policy)
    query_table = _policy_query_table(policy)
    for c in range(256):
        t.path_raw[c] = path_table[c] != 0
        t.query_raw[c] = query_table[c] != 0
    t.path_iv = _intervals(_policy_path_allowed(policy), &t.path_iv_n)
    t.query_iv = _intervals(_policy_query_allowed(policy), &t.query_iv_n)
    for c in range(128):
        t.path_ascii[c] = _in_intervals(t.path_iv, t.path_iv_n, c)
        t.query_ascii[c] = _in_intervals(t.query_iv, t.query_iv_n, c)
    t.plus = policy.plus_as_space
    t.path_raw_clean = True
    t.query_raw_clean = True
    for c in range(128):
        if t.path_raw[c] and c != 0x25 and not t.path_ascii[c]:
            t.path_raw_clean = False
        if t.query_raw[c] and c != 0x25 and not t.query_ascii[c]:
            t.query_raw_clean = False
    if t.plus and t.query_raw[0x2B] and not t.query_ascii[0x20]:
        t.query_raw_clean = False
    t.max_length = policy.max_length
    t.max_segments = policy.max_segments
    t.max_params = policy.max_params
    t.reject_slash = policy.encoded_slash == "reject"
    t.reject_backslash = policy.encoded_backslash == "reject"
    t.reject_dots = policy.dot_segment == "reject"
    t.reject_empty = policy.empty_segment == "reject"
    t.reject_double = policy.double_encoding == "reject"
    t.split = policy.path_params == "split"
    return t


# The derived fields of a Policy (see its docstring), read once per policy.
def _policy_path_table(policy):
    table = getattr(policy, "_raw_path_table", None)
    if table is None:  # a Policy from before the derived tables
        table = bytes(c in policy._path_ok for c in range(256))
    return table


def _policy_query_table(policy):
    table = getattr(policy, "_raw_query_table", None)
    if table is None:
        table = bytes(c in policy._query_ok for c in range(256))
    return table


def _policy_path_allowed(policy):
    allowed = getattr(policy, "_path_allowed", None)
    if allowed is None:
        allowed = _policy._allowed_intervals(policy.allowed_ranges, policy.allow_chars)
    return allowed


def _policy_query_allowed(policy):
    allowed = getattr(policy, "_query_allowed", None)
    if allowed is None:
        extra = policy.allow_chars + getattr(policy, "query_allow_chars", "")
        allowed = _policy._allowed_intervals(policy.allowed_ranges, extra)
    return allowed


# The tables of the policy used last, and of every policy seen (by id, the
# policy kept alive beside them: hashing a dataclass per call costs more than
# the parse). Bounded: an application has a handful of policies.
cdef _Tables _last_tables = None
cdef dict _tables_by_id = {}


cdef inline _Tables _tables_for(object policy):
    global _last_tables
    cdef _Tables t = _last_tables
    if t is not None and t.policy is policy:
        return t
    t = _tables_by_id.get(id(policy))
    if t is None or t.policy is not policy:
        if len(_tables_by_id) >= 64:
            _tables_by_id.clear()
        t = _build_tables(policy)
        _tables_by_id[id(policy)] = t
    _last_tables = t
    return t


# --- one piece: decode and check --------------------------------------------------

cdef struct Piece:
    Py_ssize_t length          # decoded bytes in the scratch buffer
    Py_ssize_t first_slash     # raw offset of the first %2F, or -1
    Py_ssize_t first_backslash # raw offset of the first %5C, or -1
    bint high                  # a decoded byte >= 0x80
    bint percent               # a decoded '%' (from %25)
    bint escaped               # the piece held an escape (else decoded == raw)


cdef inline Py_ssize_t _raw_offset(const unsigned char* s, Py_ssize_t start, Py_ssize_t k) noexcept:
    """Where decoded byte k of the piece starting at s[start] starts in the raw
    bytes. Only called with k < the piece's decoded length, and each decoded
    byte is one raw byte or one whole escape, so the walk stays in the piece."""
    cdef Py_ssize_t position = start
    while k > 0:
        position += 3 if s[position] == 0x25 else 1
        k -= 1
    return position


cdef int _decode(
    const unsigned char* s, Py_ssize_t start, Py_ssize_t end, bint plus,
    unsigned char* out, Piece* piece, int component, Py_ssize_t index, Err* err,
) noexcept:
    """Percent-decode s[start:end] into out; 0, or -1 at a malformed escape.

    Reads s[i] for start <= i < end only: an escape's two digits are read
    only after checking i + 2 < end (a '%' among the last two bytes is a
    malformed escape). Writes at most end - start bytes to out."""
    cdef Py_ssize_t i = start, k = 0
    cdef unsigned char c
    cdef signed char high, low
    piece.first_slash = -1
    piece.first_backslash = -1
    piece.high = False
    piece.percent = False
    piece.escaped = False
    while i < end:
        c = s[i]
        if c == 0x25:  # '%'
            if i + 2 >= end:
                return _fail(err, R_MALFORMED, component, index, i)
            high = _HEX[s[i + 1]]
            low = _HEX[s[i + 2]]
            if high < 0 or low < 0:
                return _fail(err, R_MALFORMED, component, index, i)
            c = <unsigned char>((high << 4) | low)
            piece.escaped = True
            if c == 0x2F:
                if piece.first_slash < 0:
                    piece.first_slash = i
            elif c == 0x5C:
                if piece.first_backslash < 0:
                    piece.first_backslash = i
            elif c == 0x25:
                piece.percent = True
            elif c >= 0x80:
                piece.high = True
            i += 3
        else:
            if c == 0x2B and plus:  # '+' is space before decoding (form semantics)
                c = 0x20
            i += 1
        out[k] = c
        k += 1
    piece.length = k
    return 0


cdef inline Py_ssize_t _utf8_error(const unsigned char* d, Py_ssize_t n) noexcept:
    """The index of the first byte of d[:n] that starts no valid UTF-8 sequence
    (RFC 3629 §4, as CPython's strict decoder reports it), or -1.

    Each step reads d[i] .. d[i + len - 1] only after checking i + len <= n."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c, c1
    while i < n:
        c = d[i]
        if c < 0x80:
            i += 1
            continue
        if c < 0xC2 or c > 0xF4:
            return i
        if c < 0xE0:
            if i + 1 >= n or (d[i + 1] & 0xC0) != 0x80:
                return i
            i += 2
            continue
        if i + 1 >= n:
            return i
        c1 = d[i + 1]
        if c < 0xF0:
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 > 0x9F) or (c1 & 0xC0) != 0x80:
                return i
            if i + 2 >= n or (d[i + 2] & 0xC0) != 0x80:
                return i
            i += 3
            continue
        if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 > 0x8F) or (c1 & 0xC0) != 0x80:
            return i
        if i + 2 >= n or (d[i + 2] & 0xC0) != 0x80:
            return i
        if i + 3 >= n or (d[i + 3] & 0xC0) != 0x80:
            return i
        i += 4
    return -1


cdef inline Py_ssize_t _forbidden_at(
    const unsigned char* d, Py_ssize_t n, const unsigned char* ascii,
    const unsigned int* iv, Py_ssize_t iv_n,
) noexcept:
    """The index of the first character of d[:n] (valid UTF-8) that is not
    allowed, or -1. A lead byte says how many bytes follow, all within n."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c
    cdef unsigned int cp
    cdef Py_ssize_t step
    while i < n:
        c = d[i]
        if c < 0x80:
            if not ascii[c]:
                return i
            i += 1
            continue
        if c < 0xE0:
            cp = ((c & 0x1F) << 6) | (d[i + 1] & 0x3F)
            step = 2
        elif c < 0xF0:
            cp = ((c & 0x0F) << 12) | ((d[i + 1] & 0x3F) << 6) | (d[i + 2] & 0x3F)
            step = 3
        else:
            cp = (((c & 0x07) << 18) | ((d[i + 1] & 0x3F) << 12)
                  | ((d[i + 2] & 0x3F) << 6) | (d[i + 3] & 0x3F))
            step = 4
        if not _in_intervals(iv, iv_n, cp):
            return i
        i += step
    return -1


cdef int _check_text(
    const unsigned char* s, Py_ssize_t start, const unsigned char* d, Piece* piece,
    bint raw_clean, const unsigned char* ascii, const unsigned int* iv, Py_ssize_t iv_n,
    int component, Py_ssize_t index, Err* err,
) noexcept:
    """invalid-utf8, then forbidden-char, over a decoded piece."""
    cdef Py_ssize_t bad
    if piece.high:
        bad = _utf8_error(d, piece.length)
        if bad >= 0:
            return _fail(err, R_INVALID_UTF8, component, index, _raw_offset(s, start, bad))
    elif raw_clean and not piece.escaped:
        return 0  # raw bytes the policy allows, each decoding to an allowed character
    bad = _forbidden_at(d, piece.length, ascii, iv, iv_n)
    if bad >= 0:
        return _fail(err, R_FORBIDDEN, component, index, _raw_offset(s, start, bad))
    return 0


cdef inline bint _has_escape_text(const unsigned char* d, Py_ssize_t n) noexcept:
    """'%' and two HEXDIG in decoded text: double encoding (from %25XX)."""
    cdef Py_ssize_t i = 0
    while i + 2 < n:
        if d[i] == 0x25 and _HEX[d[i + 1]] >= 0 and _HEX[d[i + 2]] >= 0:
            return True
        i += 1
    return False


cdef inline bint _is_dots(const unsigned char* d, Py_ssize_t n) noexcept:
    return (n == 1 and d[0] == 0x2E) or (n == 2 and d[0] == 0x2E and d[1] == 0x2E)


cdef inline object _text(const unsigned char* d, Py_ssize_t n, bint high):
    if n == 0:
        return ""
    if high:
        return PyUnicode_DecodeUTF8(<const char*>d, n, NULL)
    return PyUnicode_DecodeASCII(<const char*>d, n, NULL)


# --- the walk -----------------------------------------------------------------------

cdef struct Walk:
    const unsigned char* s
    Py_ssize_t n
    unsigned char* scratch
    Err err


cdef int _kept_parts(
    _Tables t, const unsigned char* d, Py_ssize_t n, bint* dots, bint* empty,
) noexcept:
    """The dot-segment and empty-segment readings of decoded text whose kept
    separators (%2F under encoded_slash="keep", '\\' under
    encoded_backslash="keep") split it into parts."""
    cdef Py_ssize_t i = 0, part = 0
    cdef unsigned char c
    cdef bint sep
    while i <= n:
        if i == n:
            sep = True
        else:
            c = d[i]
            sep = (c == 0x2F and not t.reject_slash) or (c == 0x5C and not t.reject_backslash)
        if sep:
            if _is_dots(d + part, i - part):
                dots[0] = True
            if i - part == 0 and i < n:
                empty[0] = True
            part = i + 1
        i += 1
    return 0


cdef object _segment(
    Walk* w, _Tables t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t index, bint last, list params_out,
):
    """Check segment index (raw bytes s[a:b]) and return its text, or None
    with w.err set."""
    cdef const unsigned char* s = w.s
    cdef unsigned char* d = w.scratch
    cdef Piece piece
    cdef Py_ssize_t semi, p0, p1, eq
    cdef bint dots = False, empty = False, double = False
    cdef bint check_dots = t.reject_dots
    if a == b:
        if not last and t.reject_empty:
            _fail(&w.err, R_EMPTY, C_PATH, index, a)
            return None
        if params_out is not None:
            params_out.append(())
        return ""
    # The first raw ';' (s[a:b] is inside the buffer).
    semi = a
    while semi < b and s[semi] != 0x3B:
        semi += 1
    name_end = semi if t.split else b
    if _decode(s, a, name_end, False, d, &piece, C_PATH, index, &w.err) < 0:
        return None
    if _piece_rules(s, a, d, &piece, t, C_PATH, index, &w.err) < 0:
        return None
    if check_dots or t.reject_empty:
        _kept_parts(t, d, piece.length, &dots, &empty)
    if t.reject_double and piece.percent:
        double = _has_escape_text(d, piece.length)
    text = _text(d, piece.length, piece.high)
    if t.split:
        if piece.length == 0 and not last:
            empty = True
        pairs = []
        p0 = semi + 1
        while p0 <= b:
            p1 = p0
            while p1 < b and s[p1] != 0x3B:
                p1 += 1
            if p1 > p0:
                eq = p0
                while eq < p1 and s[eq] != 0x3D:
                    eq += 1
                key = _checked_param(w, t, p0, eq, index, &double)
                if key is None:
                    return None
                if eq < p1:
                    value = _checked_param(w, t, eq + 1, p1, index, &double)
                    if value is None:
                        return None
                else:
                    value = ""
                pairs.append((key, value))
            p0 = p1 + 1
        params_out.append(tuple(pairs))
    # "..;x" is ".." to servlet containers, which strip ";params" before
    # resolving dot segments: the raw part before the first ';' counts too.
    if check_dots and not dots and semi < b and semi - a <= 6:
        if _decode(s, a, semi, False, d, &piece, C_PATH, index, &w.err) == 0:
            dots = _is_dots(d, piece.length)
    if t.reject_dots and dots:
        _fail(&w.err, R_DOT, C_PATH, index, a)
        return None
    if t.reject_empty and empty:
        _fail(&w.err, R_EMPTY, C_PATH, index, a)
        return None
    if t.reject_double and double:
        _fail(&w.err, R_DOUBLE, C_PATH, index, a)
        return None
    return text


cdef object _checked_param(
    Walk* w, _Tables t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t index, bint* double,
):
    """A matrix parameter's key or value: the path piece rules; its text or None."""
    cdef Piece piece
    cdef unsigned char* d = w.scratch
    if _decode(w.s, a, b, False, d, &piece, C_PATH, index, &w.err) < 0:
        return None
    if _piece_rules(w.s, a, d, &piece, t, C_PATH, index, &w.err) < 0:
        return None
    if t.reject_double and piece.percent and _has_escape_text(d, piece.length):
        double[0] = True
    return _text(d, piece.length, piece.high)


cdef int _piece_rules(
    const unsigned char* s, Py_ssize_t a, const unsigned char* d, Piece* piece, _Tables t,
    int component, Py_ssize_t index, Err* err,
) noexcept:
    """encoded-slash, encoded-backslash, invalid-utf8, forbidden-char (path set)."""
    if piece.first_slash >= 0 and t.reject_slash:
        return _fail(err, R_ENCODED_SLASH, component, index, piece.first_slash)
    if piece.first_backslash >= 0 and t.reject_backslash:
        return _fail(err, R_ENCODED_BACKSLASH, component, index, piece.first_backslash)
    return _check_text(s, a, d, piece, t.path_raw_clean, t.path_ascii, t.path_iv, t.path_iv_n,
                       component, index, err)


cdef object _query_piece(Walk* w, _Tables t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t index):
    cdef Piece piece
    cdef unsigned char* d = w.scratch
    if a == b:
        return ""
    if _decode(w.s, a, b, t.plus, d, &piece, C_QUERY, index, &w.err) < 0:
        return None
    if _check_text(w.s, a, d, &piece, t.query_raw_clean, t.query_ascii, t.query_iv,
                   t.query_iv_n, C_QUERY, index, &w.err) < 0:
        return None
    return _text(d, piece.length, piece.high)


cdef object _authority(Walk* w, _Tables t, Py_ssize_t start, Py_ssize_t end):
    """Check the authority s[start:end] of an absolute-form target (RFC 3986
    §3.2.2-3.2.3, no userinfo: RFC 9110 §4.2.4); its decoded text, or None."""
    cdef const unsigned char* s = w.s
    cdef Py_ssize_t i = start, host_end, digits, k
    cdef long port
    cdef Piece piece
    cdef unsigned char* d = w.scratch
    if i >= end:
        _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
        return None
    if s[i] == 0x5B:  # '[' IP-literal
        i += 1
        if i < end and (s[i] == 0x76 or s[i] == 0x56):  # IPvFuture
            i += 1
            digits = i
            while i < end and _HEX[s[i]] >= 0:
                i += 1
            if i == digits or i >= end or s[i] != 0x2E:
                _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
                return None
            i += 1
            digits = i
            while i < end and _FUTURE[s[i]]:
                i += 1
        else:
            digits = i
            while i < end and _IPV6[s[i]]:
                i += 1
        if i == digits or i >= end or s[i] != 0x5D:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
        i += 1
        host_end = i
        reg_name = False
    else:
        while i < end and (_REG_NAME[s[i]] or s[i] == 0x25):
            i += 1
        host_end = i
        if host_end == start:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
        reg_name = True
    if i < end:
        if s[i] != 0x3A:  # ':'
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
        i += 1
        port = 0
        digits = 0
        while i < end and 0x30 <= s[i] <= 0x39 and digits < 6:
            port = port * 10 + (s[i] - 0x30)
            digits += 1
            i += 1
        if i < end or digits > 5 or port > 65535:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
    if not reg_name:
        return (<bytes>s[start:end]).decode("ascii")
    if _decode(s, start, host_end, False, d, &piece, C_TARGET, -1, &w.err) < 0:
        return None
    if piece.first_slash >= 0:
        _fail(&w.err, R_ENCODED_SLASH, C_TARGET, -1, piece.first_slash)
        return None
    if piece.first_backslash >= 0:
        _fail(&w.err, R_ENCODED_BACKSLASH, C_TARGET, -1, piece.first_backslash)
        return None
    if _check_text(s, start, d, &piece, False, t.path_ascii, t.path_iv, t.path_iv_n,
                   C_TARGET, -1, &w.err) < 0:
        return None
    for k in range(piece.length):
        if d[k] < 0x80 and _HOST_DELIMS[d[k]]:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, _raw_offset(s, start, k))
            return None
    host = _text(d, piece.length, piece.high)
    if host_end < end:
        return host + (<bytes>s[host_end:end]).decode("ascii")
    return host


cdef object _walk(Walk* w, _Tables t, bytes raw):
    """Every rule, in the reference's order; the Target, or None with w.err set."""
    cdef const unsigned char* s = w.s
    cdef Py_ssize_t n = w.n
    cdef Py_ssize_t i, path_start, path_end, question, slashes, too_many_path = -1
    cdef Py_ssize_t pairs_started, too_many_query = -1, a, b, index, segment_count
    cdef bint in_pair
    cdef unsigned char c
    cdef const void* found
    authority = None

    if n > t.max_length:
        _fail(&w.err, R_TOO_LONG, C_TARGET, -1, t.max_length)
        return None
    found = memchr(s, 0x23, n)  # '#': the first of n bytes
    if found != NULL:
        _fail(&w.err, R_FRAGMENT, C_TARGET, -1, <const unsigned char*>found - s)
        return None

    if n > 0 and s[0] == 0x2F:
        path_start = 0
    else:
        # RFC 9112 §3.2.2 absolute-form for the schemes of RFC 9110 §4.2, in
        # any case (RFC 3986 §3.1). Every index is checked against n first.
        i = 4
        if (n < 7 or (s[0] | 0x20) != 0x68 or (s[1] | 0x20) != 0x74
                or (s[2] | 0x20) != 0x74 or (s[3] | 0x20) != 0x70):
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
        if (s[4] | 0x20) == 0x73:
            i = 5
        if i + 3 > n or s[i] != 0x3A or s[i + 1] != 0x2F or s[i + 2] != 0x2F:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
        i += 3
        a = i
        while i < n and s[i] != 0x2F and s[i] != 0x3F:
            i += 1
        authority = _authority(w, t, a, i)
        if authority is None:
            return None
        path_start = i

    # raw-char in the path; count its segments ('/' each) on the way.
    i = path_start
    slashes = 0
    while i < n:  # i < n: inside the buffer
        c = s[i]
        if c == 0x3F:
            break
        if not t.path_raw[c]:
            _fail(&w.err, R_RAW_CHAR, C_PATH, slashes - 1 if slashes else 0, i)
            return None
        if c == 0x2F:
            if slashes == t.max_segments:
                too_many_path = i
            slashes += 1
        i += 1
    path_end = i
    question = i if i < n else -1
    segment_count = slashes if path_end > path_start else 1  # empty path: "/"

    # raw-char in the query; count its non-empty pairs.
    pairs_started = 0
    if question >= 0:
        in_pair = False
        i = question + 1
        while i < n:
            c = s[i]
            if c == 0x26:  # '&'
                in_pair = False
            else:
                if not in_pair:
                    in_pair = True
                    if pairs_started == t.max_params:
                        too_many_query = i
                    pairs_started += 1
                if not t.query_raw[c]:
                    _fail(&w.err, R_RAW_CHAR, C_QUERY, pairs_started - 1, i)
                    return None
            i += 1

    if segment_count > t.max_segments:
        _fail(&w.err, R_TOO_MANY, C_PATH, t.max_segments, too_many_path)
        return None
    if pairs_started > t.max_params:
        _fail(&w.err, R_TOO_MANY, C_QUERY, t.max_params, too_many_query)
        return None

    # Segment by segment.
    cdef tuple segments = PyTuple_New(segment_count)
    params = [] if t.split else None
    if path_end == path_start:
        Py_INCREF("")
        PyTuple_SET_ITEM(segments, 0, "")
        if t.split:
            params.append(())
    else:
        a = path_start + 1
        index = 0
        while True:
            b = a
            while b < path_end and s[b] != 0x2F:
                b += 1
            text = _segment(w, t, a, b, index, b == path_end, params)
            if text is None:
                return None
            Py_INCREF(text)
            PyTuple_SET_ITEM(segments, index, text)
            index += 1
            if b == path_end:
                break
            a = b + 1

    # Pair by pair.
    cdef tuple query = PyTuple_New(pairs_started)
    if pairs_started:
        index = 0
        a = question + 1
        while a <= n:
            b = a
            while b < n and s[b] != 0x26:
                b += 1
            if b > a:
                i = a
                while i < b and s[i] != 0x3D:
                    i += 1
                name = _query_piece(w, t, a, i, index)
                if name is None:
                    return None
                value = _query_piece(w, t, i + 1, b, index) if i < b else ""
                if value is None:
                    return None
                pair = (name, value)
                Py_INCREF(pair)
                PyTuple_SET_ITEM(query, index, pair)
                index += 1
            a = b + 1

    return _target._make_target(
        raw, path_start, authority, segments, tuple(params) if t.split else None, query
    )


cdef bytes _as_bytes(object raw):
    if isinstance(raw, str):
        # Lone surrogates pass through, to be rejected as raw bytes >= 0x80.
        return raw.encode("utf-8", "surrogatepass")
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw)
    raise TypeError(f"parse_target() takes bytes or str, not {type(raw).__name__}")


cdef object _parse(bytes raw, _Tables t):
    cdef Walk w
    cdef unsigned char stack[512]
    w.s = <const unsigned char*>PyBytes_AS_STRING(raw)
    w.n = PyBytes_GET_SIZE(raw)
    # Decoding never lengthens a piece: n bytes of scratch are enough.
    if w.n <= 512:
        w.scratch = stack
    else:
        w.scratch = <unsigned char*>PyMem_Malloc(w.n)
        if w.scratch == NULL:
            raise MemoryError()
    try:
        result = _walk(&w, t, raw)
    finally:
        if w.scratch != stack:
            PyMem_Free(w.scratch)
    if result is None:
        raise _error(&w.err)
    return result


def parse_target(raw, policy=None):
    """Split, decode and check a raw request target; return its decoded pieces.

    The compiled twin of ``urlguard._parser_py.parse_target``: same arguments,
    same result, same ``InvalidTarget``."""
    cdef _Tables t = _tables_for(DEFAULT_POLICY if policy is None else policy)
    if type(raw) is not bytes:
        raw = _as_bytes(raw)
    return _parse(<bytes>raw, t)


def parse_split_target(raw_path, query, policy):
    """``parse_target(raw_path + b"?" + query, policy)`` (of ``raw_path`` alone
    when ``query`` is empty), for servers that hand the two over apart (ASGI)."""
    cdef _Tables t = _tables_for(policy)
    if type(raw_path) is not bytes:
        raw_path = _as_bytes(raw_path)
    if type(query) is not bytes:
        query = _as_bytes(query)
    if PyBytes_GET_SIZE(query):
        raw = b"?".join((raw_path, query))
    else:
        raw = raw_path
    return _parse(<bytes>raw, t)
