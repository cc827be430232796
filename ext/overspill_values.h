/* Making a value class's instance without running its __init__ (see new_slotted in _speedups_values.pxi). */
#ifndef OVERSPILL_VALUES_H
#define OVERSPILL_VALUES_H

#include <Python.h>

/* Whether instances of cls are made by object.__new__ itself (its tp_new is object's). */
static int osp_plain_new(PyObject *cls) {
    return ((PyTypeObject *)cls)->tp_new == PyBaseObject_Type.tp_new;
}

/* object.__new__(cls): a new reference, or NULL with the exception set (an abstract class). */
static PyObject *osp_new_object(PyObject *cls) {
    PyObject *none = PyTuple_New(0), *made;
    if (none == NULL) return NULL;
    made = PyBaseObject_Type.tp_new((PyTypeObject *)cls, none, NULL);
    Py_DECREF(none);
    return made;
}

/* descr.__set__(obj, value) for a member descriptor (a slot): its own setter,
 * which checks obj's type, without the bound-method call around it.
 * Returns -1 with the exception set on failure. */
static int osp_set_member(PyObject *descr, PyObject *obj, PyObject *value) {
    return Py_TYPE(descr)->tp_descr_set(descr, obj, value);
}

#endif
