# cython: language_level=3, boundscheck=False, wraparound=False
"""The scan of :func:`sst_cleaner.engine._attr_cap._cap_attributes` for a start tag with
too many attributes, character by character in C.

The pure-Python scan is one possessive regular expression (``_short_tags_pattern``),
which the regex engine runs opcode by opcode over every character of the page: on an
ordinary page it was most of the cost of the attribute cap, itself several percent of a
fit. This is the same tokenisation as a loop with no backtracking (every repeat of the
pattern is possessive, so each step is taken once): it stops where that pattern's match
ends.
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_KIND


cdef extern from "Python.h":
    # a macro reading the str's buffer: no Python object involved
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index) nogil


cdef inline bint _ws(Py_UCS4 ch) noexcept nogil:
    # _attr_cap._WS: the characters ``\s`` matches in a str pattern
    if ch <= 0x20:
        return ch == 0x20 or (0x09 <= ch <= 0x0D) or (0x1C <= ch <= 0x1F)
    if ch < 0x85:
        return False
    return (
        ch == 0x85
        or ch == 0xA0
        or ch == 0x1680
        or (0x2000 <= ch <= 0x200A)
        or ch == 0x2028
        or ch == 0x2029
        or ch == 0x202F
        or ch == 0x205F
        or ch == 0x3000
    )


cdef inline bint _letter(Py_UCS4 ch) noexcept nogil:
    return (0x41 <= ch <= 0x5A) or (0x61 <= ch <= 0x7A)


cdef Py_ssize_t _attribute_end(int kind, void* data, Py_ssize_t n, Py_ssize_t j) noexcept nogil:
    """Where ``[WS/]++ATTR`` (``_attr_cap._ONE_ATTR``) matched at ``j`` ends, or -1."""
    cdef Py_ssize_t m = j, a, b, q
    cdef Py_UCS4 ch, quote
    while m < n:
        ch = PyUnicode_READ(kind, data, m)
        if not (_ws(ch) or ch == 0x2F):  # "/"
            break
        m += 1
    if m == j:
        return -1
    # the name: [^WS/>=]++
    a = m
    while a < n:
        ch = PyUnicode_READ(kind, data, a)
        if _ws(ch) or ch == 0x2F or ch == 0x3E or ch == 0x3D:  # / > =
            break
        a += 1
    if a == m:
        return -1
    # (?:[WS]*+=[WS]*+(?:"[^"]*+"|'[^']*+'|[^WS>]*+))?+
    b = a
    while b < n and _ws(PyUnicode_READ(kind, data, b)):
        b += 1
    if b >= n or PyUnicode_READ(kind, data, b) != 0x3D:
        return a
    b += 1
    while b < n and _ws(PyUnicode_READ(kind, data, b)):
        b += 1
    if b < n:
        quote = PyUnicode_READ(kind, data, b)
        if quote == 0x22 or quote == 0x27:  # a quoted value, if its quote closes
            q = b + 1
            while q < n and PyUnicode_READ(kind, data, q) != quote:
                q += 1
            if q < n:
                return q + 1
    while b < n:
        ch = PyUnicode_READ(kind, data, b)
        if _ws(ch) or ch == 0x3E:
            break
        b += 1
    return b


def run_end(str html, Py_ssize_t pos, Py_ssize_t max_attributes):
    """Where ``_attr_cap._short_tags_pattern(max_attributes).match(html, pos)`` ends: the
    ``<`` of the first start tag from ``pos`` with ``max_attributes`` or more attributes,
    else the end of ``html``."""
    if max_attributes < 1:
        raise ValueError("max_attributes must be at least 1")
    if pos < 0:
        raise ValueError("pos must not be negative")
    cdef Py_ssize_t n = len(html), end
    cdef int kind = PyUnicode_KIND(html)
    cdef void* data = PyUnicode_DATA(html)
    with nogil:
        end = _run_end(kind, data, n, pos, max_attributes)
    return end


cdef Py_ssize_t _run_end(int kind, void* data, Py_ssize_t n, Py_ssize_t i, Py_ssize_t max_attributes) noexcept nogil:
    cdef Py_ssize_t j, e, k
    cdef Py_UCS4 ch
    while True:
        while i < n and PyUnicode_READ(kind, data, i) != 0x3C:  # "<"
            i += 1
        if i >= n:
            return n
        j = i + 1
        if j >= n or not _letter(PyUnicode_READ(kind, data, j)):
            i = j  # a stray "<": text
            continue
        # the name: [A-Za-z][^WS/>]*+
        j += 1
        while j < n:
            ch = PyUnicode_READ(kind, data, j)
            if _ws(ch) or ch == 0x2F or ch == 0x3E:
                break
            j += 1
        if j < n and PyUnicode_READ(kind, data, j) == 0x3E:
            i = j + 1
            continue
        k = 0
        while True:
            e = _attribute_end(kind, data, n, j)
            if e < 0:
                break
            if k == max_attributes - 1:
                return i  # one attribute too many: the run ends before this tag
            k += 1
            j = e
        i = j
