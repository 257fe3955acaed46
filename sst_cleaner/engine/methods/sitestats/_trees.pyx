# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The learnt scorer's tree walk, compiled (see ``_scorer.TreeEnsemble``).

``TreeEnsemble._walk`` walks every row down every tree at once with numpy gathers, after
the rows (Python lists of floats, one per sentence) were packed into one array. Here each
row is read into a C buffer once and walked tree by tree. Both send a row right exactly
when its value is greater than the split's threshold, so both find the same leaves; the
leaves' values are summed by the caller, with numpy in both cases, so the sums agree to
the bit.
"""

from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_AsDouble, PyFloat_CheckExact
from cpython.list cimport PyList_GET_ITEM
from cpython.ref cimport PyObject
from cpython.mem cimport PyMem_Free, PyMem_Malloc


def leaf_indices(
    list rows,
    Py_ssize_t n_cols,
    const Py_ssize_t[::1] feature,
    const double[::1] threshold,
    Py_ssize_t n_trees,
    Py_ssize_t stride,
    Py_ssize_t depth,
    Py_ssize_t n_leaves,
    Py_ssize_t n_internal,
    Py_ssize_t[:, ::1] out,
):
    """Fill ``out[r, t]`` with the index, in the ensemble's flat leaf values, of the leaf
    row ``r`` of ``rows`` reaches in tree ``t``.

    The trees are perfect binary trees of ``depth`` (node ``s`` has children ``2s+1`` and
    ``2s+2``), tree ``t``'s internal nodes at ``t * stride`` of ``feature`` and
    ``threshold``. Every row must hold ``n_cols`` numbers, and every feature index must be
    below ``n_cols`` (the caller checks the ensemble's features against the rows')."""
    cdef Py_ssize_t n = len(rows)
    cdef Py_ssize_t r, j, t, d, s, base
    cdef object row, item
    if out.shape[0] != n or out.shape[1] != n_trees:
        raise ValueError("leaf_indices: out has the wrong shape")
    if feature.shape[0] < n_trees * stride or threshold.shape[0] < n_trees * stride:
        raise ValueError("leaf_indices: fewer internal nodes than trees times stride")
    for j in range(feature.shape[0]):
        if not 0 <= feature[j] < n_cols:
            raise ValueError("leaf_indices: a feature index out of the rows' range")
    cdef double *x = <double *> PyMem_Malloc(max(1, n_cols) * sizeof(double))
    if x == NULL:
        raise MemoryError()
    try:
        for r in range(n):
            row = rows[r]
            if len(row) != n_cols:
                raise ValueError("leaf_indices: rows of unequal length")
            if type(row) is list:  # a row as the method builds it: read in place
                for j in range(n_cols):
                    item = <object> PyList_GET_ITEM(row, j)
                    x[j] = PyFloat_AS_DOUBLE(item) if PyFloat_CheckExact(item) else PyFloat_AsDouble(item)
            else:
                for j in range(n_cols):
                    x[j] = PyFloat_AsDouble(row[j])
            for t in range(n_trees):
                base = t * stride
                s = 0
                for d in range(depth):
                    # without a branch: which way a row goes is unpredictable
                    s = 2 * s + 1 + (x[feature[base + s]] > threshold[base + s])
                out[r, t] = t * n_leaves + s - n_internal
    finally:
        PyMem_Free(x)
