# cython: language_level=3
"""The floor: what making the answer costs, with no check at all.

The segments and query pairs of a target, made in C the way the compiled
parser makes them (strings of the right width, a tuple of segments, a tuple
of (name, value) tuples) but with nothing checked: the path split at '/',
the query at '&' and each pair at its first '=', escapes decoded (and '+' in
the query), and CPython's UTF-8 decoder run on any piece holding a byte
>= 0x80 (it raises on invalid UTF-8, a ValueError). No Target either, and no
attributes to read: the pieces are returned as they are made.

It is what these objects cost by themselves, made from the raw bytes with
one look at each piece. The micro part times it beside urlguard's parsers:
the distance between the two is what the checks and the Target cost. Built
by bench/floor.py, which checks that it makes what urlguard makes; not part
of urlguard.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.string cimport memchr, memcpy

cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void* PyUnicode_DATA(object)
    object PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)

cdef signed char _HEX[256]
for _c in range(256):
    _HEX[_c] = int(chr(_c), 16) if chr(_c) in "0123456789abcdefABCDEF" else -1


cdef inline bint _ascii_only(const unsigned char* d, Py_ssize_t n) noexcept:
    """No byte >= 0x80 in d[:n]: eight bytes at a time, then one at a time."""
    cdef unsigned long long word, bits = 0
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&word, d + i, 8)
        bits |= word
        i += 8
    while i < n:
        bits |= d[i]
        i += 1
    return (bits & 0x8080808080808080u) == 0


cdef object _text(const unsigned char* d, Py_ssize_t n, bint plus, unsigned char* out):
    """d[:n] as text: ASCII without an escape (or a '+' in the query) is
    copied; anything else is decoded into out (at most n bytes), then copied
    or, when it holds a byte >= 0x80, given to CPython's strict UTF-8 decoder."""
    cdef Py_ssize_t i = 0, k = 0
    cdef bint high = False
    cdef unsigned char c
    if (memchr(d, 0x25, n) == NULL and not (plus and memchr(d, 0x2B, n) != NULL)
            and _ascii_only(d, n)):
        text = PyUnicode_New(n, 127)
        memcpy(PyUnicode_DATA(text), d, n)
        return text
    while i < n:
        c = d[i]
        if c == 0x25 and i + 2 < n and _HEX[d[i + 1]] >= 0 and _HEX[d[i + 2]] >= 0:
            c = <unsigned char>((_HEX[d[i + 1]] << 4) | _HEX[d[i + 2]])
            i += 3
        else:
            if c == 0x2B and plus:
                c = 0x20
            i += 1
        high |= c >= 0x80
        out[k] = c
        k += 1
    if high:
        return PyUnicode_DecodeUTF8(<const char*>out, k, "strict")
    text = PyUnicode_New(k, 127)
    memcpy(PyUnicode_DATA(text), out, k)
    return text


def split(bytes raw):
    """(segments, query) of ``raw``, made with no check."""
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(raw)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(raw), i, q = 0, a, k, count = 0, eq
    cdef unsigned char stack[512]
    cdef unsigned char* out = stack
    cdef bint after_separator = True
    if n > 512:
        out = <unsigned char*>PyMem_Malloc(n)
        if out == NULL:
            raise MemoryError()
    try:
        while q < n and s[q] != 0x3F:  # the '?' (q == n: none)
            count += s[q] == 0x2F
            q += 1
        segments = PyTuple_New(count)
        a = i = 1
        for k in range(count):  # segment k is s[a:i]
            while i < q and s[i] != 0x2F:
                i += 1
            text = _text(s + a, i - a, False, out)
            Py_INCREF(text)
            PyTuple_SET_ITEM(segments, k, text)
            a = i = i + 1
        count = 0  # non-empty pairs
        for i in range(q + 1, n):
            if s[i] == 0x26:
                after_separator = True
            elif after_separator:
                count += 1
                after_separator = False
        query = PyTuple_New(count)
        a = i = q + 1
        k = 0
        while k < count:  # a pair is s[a:i], its name s[a:eq]
            eq = -1
            while i < n and s[i] != 0x26:
                if s[i] == 0x3D and eq < 0:
                    eq = i
                i += 1
            if i > a:
                if eq < 0:
                    eq = i
                name = _text(s + a, eq - a, True, out)
                value = _text(s + eq + 1, i - eq - 1, True, out) if eq < i else ""
                pair = (name, value)
                Py_INCREF(pair)
                PyTuple_SET_ITEM(query, k, pair)
                k += 1
            a = i = i + 1
        return segments, query
    finally:
        if out != stack:
            PyMem_Free(out)
