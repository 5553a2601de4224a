/* The bf16 soup kernel in C: out = wa*a + wb*b, computed in float32 and rounded once to bf16.

   Built as an optional extension (pyproject.toml, [tool.setuptools] ext-modules); train/soup.py falls back to
   its numpy kernel, which gives the same bits, when this module is missing. numpy needs 13 passes over each
   block (widen, shift, multiply, add, round, narrow); this is one, and on two cores the CPU it saves goes to
   the threads that keep the disk busy.

   Exactness: three separate IEEE float32 operations (two products, one sum) and round to nearest, ties to
   even. It must be compiled with -ffp-contract=off: a fused multiply-add rounds once less and changes results.
   NaNs computed from bf16 inputs have a zero low half, so the rounding add cannot carry out of them. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static inline float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16; /* exact: bf16 is the high half of a float32 */
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t f32_to_bf16_rne(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static void soup_bf16(const uint16_t *a, const uint16_t *b, uint16_t *out, Py_ssize_t n, float wa, float wb)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        float x = bf16_to_f32(a[i]) * wa;
        float y = bf16_to_f32(b[i]) * wb;
        out[i] = f32_to_bf16_rne(x + y);
    }
}

static PyObject *py_bf16(PyObject *self, PyObject *args)
{
    Py_buffer a, b, out;
    float wa, wb;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*ff:bf16", &a, &b, &out, &wa, &wb))
        return NULL;
    PyObject *result = NULL;
    if (a.len != b.len || a.len != out.len || a.len % 2) {
        PyErr_Format(PyExc_ValueError, "bf16: buffers must have the same even length (got %zd, %zd, %zd)",
                     a.len, b.len, out.len);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    soup_bf16((const uint16_t *)a.buf, (const uint16_t *)b.buf, (uint16_t *)out.buf, a.len / 2, wa, wb);
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"bf16", py_bf16, METH_VARARGS,
     "bf16(a, b, out, wa, wb): out = wa*a + wb*b over bf16 buffers, float32 math, one rounding (RNE)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_soup_kernel", "bf16 soup kernel", -1, methods};

PyMODINIT_FUNC PyInit__soup_kernel(void)
{
    return PyModule_Create(&module);
}
