# What other compiled modules may call of _walk.pyx without a Python call
# (kafka_net/capture/_plain_checks.pyx walks frames where they lie in an Arrow
# buffer, by address, so it needs the entry points that take a pointer).

from libc.stdint cimport int64_t

# Signals of the internal functions (offsets are never negative).
cdef enum:
    REFUSED = -1    # not sure (the Python walker decides)
    RAISED = -2     # a Python exception is set (out of memory)


cdef class Program:
    cdef int* ops
    cdef Py_ssize_t size
    cdef readonly tuple names
    cdef tuple defaults
    cdef bint codes, records
    cdef int64_t max_elements, max_tags
    cdef int header_version
    cdef object fallback

    cdef object _walk_view(self, const unsigned char[::1] view, Py_ssize_t p)
    cdef object _response_view(self, const unsigned char[::1] view)
    cdef object _walk(self, const unsigned char* b, Py_ssize_t nb, Py_ssize_t p)
    cdef object _response(self, const unsigned char* b, Py_ssize_t nb)
    cdef Py_ssize_t _run(self, const unsigned char* b, Py_ssize_t nb, Py_ssize_t pc,
                         Py_ssize_t p, Py_ssize_t lim, list tops, list codes,
                         list recs) except RAISED
    cdef Py_ssize_t _array(self, const unsigned char* b, Py_ssize_t nb, Py_ssize_t pc,
                           Py_ssize_t p, Py_ssize_t lim, list tops, list codes,
                           list recs) except RAISED
    cdef Py_ssize_t _tags(self, const unsigned char* b, Py_ssize_t nb, Py_ssize_t pc,
                          Py_ssize_t p, list tops, list codes, list recs) except RAISED


cdef object _request_header(const unsigned char* b, Py_ssize_t nb, int header_version)
