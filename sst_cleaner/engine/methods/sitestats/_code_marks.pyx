# cython: language_level=3, boundscheck=False, wraparound=False
"""The count of words shaped like code (``_page_context.code_word_share``), compiled.

The Python path splits each text into words (``str.split()``) and searches each word
for ``_page_context._CODE_MARK`` (a match starting within its first 41 characters). Here
each text is scanned once in place: words end at the characters ``str.split()`` splits
on, and each pattern of the expression is checked at each of a word's first 41
positions, within the word, as the search would find it. Every pattern is made of ASCII
characters, so a word's other characters never start or continue one.
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_KIND, PyUnicode_READ


cdef inline bint _alnum(Py_UCS4 c):
    return (b"a"[0] <= c <= b"z"[0]) or (b"A"[0] <= c <= b"Z"[0]) or (b"0"[0] <= c <= b"9"[0])


cdef inline bint _lower(Py_UCS4 c):
    return b"a"[0] <= c <= b"z"[0]


cdef inline Py_UCS4 _at(int kind, void *data, Py_ssize_t i):
    return PyUnicode_READ(kind, data, i)


cdef bint _mark_at(int kind, void *data, Py_ssize_t i, Py_ssize_t end):
    """Whether one of the patterns matches at character ``i`` of a text (its ``kind`` and
    ``data``), inside its first ``end`` characters."""
    cdef Py_UCS4 c = _at(kind, data, i)
    cdef Py_UCS4 d = _at(kind, data, i + 1) if i + 1 < end else 0
    cdef Py_ssize_t j
    if c in u"<>{}[];=&*#":  # a single operator or bracket
        return True
    if _alnum(c):  # an identifier joined by an underscore, or a lower letter then a capital
        if d == u"_" and i + 2 < end and _alnum(_at(kind, data, i + 2)):
            return True
        return _lower(c) and (b"A"[0] <= d <= b"Z"[0])
    if (c == u":" and d == u":") or (c == u"-" and d == u">") or (c == u"(" and d == u")"):
        return True
    if c == u".":  # a method call: a dot, 1 to 40 of [a-z_], an opening parenthesis
        j = i + 1
        while j < end and j - i <= 41 and (_lower(_at(kind, data, j)) or _at(kind, data, j) == u"_"):
            j += 1
        return 1 <= j - i - 1 <= 40 and j < end and _at(kind, data, j) == u"("
    return False


def code_word_counts(list texts):
    """(words of ``texts`` shaped like code, words of ``texts``), words as ``str.split()``
    cuts them."""
    cdef Py_ssize_t code = 0, total = 0, n, i, start, p, last
    cdef str text
    cdef int kind
    cdef void *data
    for text in texts:
        n = len(text)
        kind = PyUnicode_KIND(text)
        data = PyUnicode_DATA(text)
        i = 0
        while i < n:
            while i < n and _at(kind, data, i).isspace():
                i += 1
            if i >= n:
                break
            start = i
            while i < n and not _at(kind, data, i).isspace():
                i += 1
            total += 1
            last = start + 40 if start + 40 < i - 1 else i - 1
            for p in range(start, last + 1):
                if _mark_at(kind, data, p, i):
                    code += 1
                    break
    return code, total
