/* onnx_read.c - reads an ONNX ModelProto from the protobuf wire format:
 * varints, fixed32/64 and length-delimited fields, checked against the end
 * of their message at every step (a truncated or malformed file is an error
 * naming the byte offset and the message being read, never a read past the
 * buffer). Only the fields tjit uses are decoded; others are skipped.
 * Repeated fields are counted in a first pass over their message, then
 * stored in arena arrays in a second. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

typedef struct pb {
    const uint8_t *p, *end;
    const uint8_t *base;     /* the file's first byte, for offsets */
    const tj_onnx *m;
    const char *what;        /* the message being read */
} pb;

static int pb_fail(const pb *b, const char *why)
{
    rt_error("onnx: %s: malformed model at byte %zu (in %s): %s", b->m->path,
             (size_t)(b->p - b->base), b->what, why);
    return -1;
}

static int pb_varint(pb *b, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end)
            return pb_fail(b, "truncated varint");
        uint8_t c = *b->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return pb_fail(b, "varint longer than 10 bytes");
}

/* The next field's number and wire type; 1 at the end of the message. */
static int pb_tag(pb *b, uint32_t *field, int *wire)
{
    if (b->p >= b->end)
        return 1;
    uint64_t t;
    if (pb_varint(b, &t) != 0)
        return -1;
    *field = (uint32_t)(t >> 3);
    *wire = (int)(t & 7);
    if (*field == 0 || t >> 32)
        return pb_fail(b, "bad field number");
    return 0;
}

/* A length-delimited field's bytes as a sub-reader. */
static int pb_bytes(pb *b, pb *sub, const char *what)
{
    uint64_t n;
    if (pb_varint(b, &n) != 0)
        return -1;
    if (n > (uint64_t)(b->end - b->p))
        return pb_fail(b, "length past the end of the message (truncated file?)");
    *sub = (pb){b->p, b->p + n, b->base, b->m, what};
    b->p += n;
    return 0;
}

static int pb_skip(pb *b, int wire)
{
    uint64_t v;
    pb sub;
    switch (wire) {
    case 0: return pb_varint(b, &v);
    case 1:
    case 5: {
        size_t n = wire == 1 ? 8 : 4;
        if ((size_t)(b->end - b->p) < n)
            return pb_fail(b, "truncated fixed-size field");
        b->p += n;
        return 0;
    }
    case 2: return pb_bytes(b, &sub, b->what);
    default: return pb_fail(b, "unknown wire type (groups are not used by ONNX)");
    }
}

static int pb_expect(pb *b, int wire, int want, const char *field)
{
    if (wire == want)
        return 0;
    char why[96];
    snprintf(why, sizeof why, "field %s has wire type %d, not %d", field, wire, want);
    return pb_fail(b, why);
}

static const char *pb_string(pb *b, tj_onnx *m, const char *what)
{
    pb s;
    if (pb_bytes(b, &s, what) != 0)
        return NULL;
    char *r = ir_arena_strndup(&m->arena, (const char *)s.p, (size_t)(s.end - s.p));
    if (!r)
        rt_error("onnx: %s: out of memory", m->path);
    return r;
}

/* Entries of a repeated scalar field: packed (wire 2) or one (wire 0/1/5). */
static int64_t pb_count_scalars(pb *b, int wire, int elem_wire)
{
    if (wire != 2) {
        if (wire != elem_wire)
            return pb_fail(b, "repeated scalar of the wrong wire type");
        return pb_skip(b, wire) == 0 ? 1 : -1;
    }
    pb s;
    if (pb_bytes(b, &s, b->what) != 0)
        return -1;
    if (elem_wire == 5 || elem_wire == 1) {
        size_t sz = elem_wire == 5 ? 4 : 8;
        if ((size_t)(s.end - s.p) % sz)
            return pb_fail(&s, "packed fixed-size field of a length not a multiple of its size");
        return (int64_t)((size_t)(s.end - s.p) / sz);
    }
    int64_t n = 0;
    uint64_t v;
    while (s.p < s.end) {
        if (pb_varint(&s, &v) != 0)
            return -1;
        n++;
    }
    return n;
}

/* Reads entries of a repeated scalar field into out[*k...] as double
 * (floats: fixed32) or int64 (varints). */
static int pb_read_scalars(pb *b, int wire, int elem_wire, int64_t *iout, double *fout, int64_t *k)
{
    pb s = *b, one;
    if (wire == 2 && pb_bytes(b, &s, b->what) != 0)
        return -1;
    if (wire != 2) {
        one = (pb){b->p, b->end, b->base, b->m, b->what};
        s = one;
    }
    do {
        if (elem_wire == 0) {
            uint64_t v;
            if (pb_varint(&s, &v) != 0)
                return -1;
            iout[(*k)++] = (int64_t)v;
        } else if (elem_wire == 5) {
            if (s.end - s.p < 4)
                return pb_fail(&s, "truncated float");
            float f;
            memcpy(&f, s.p, 4);
            s.p += 4;
            fout[(*k)++] = f;
        } else {
            if (s.end - s.p < 8)
                return pb_fail(&s, "truncated 8-byte field");
            if (fout)
                memcpy(&fout[*k], s.p, 8);
            else
                memcpy(&iout[*k], s.p, 8);
            (*k)++;
            s.p += 8;
        }
    } while (wire == 2 && s.p < s.end);
    if (wire != 2)
        b->p = s.p;
    return 0;
}

int ox_dtype(int64_t t)
{
    switch (t) {
    case 1: return TJ_F32;
    case 2: return TJ_U8;
    case 3: return TJ_I8;
    case 5: return TJ_I16;
    case 6: return TJ_I32;
    case 7: return TJ_I64;
    case 9: return TJ_BOOL;
    case 10: return TJ_F16;
    case 11: return TJ_F64;
    case 16: return TJ_BF16;
    default: return -1;
    }
}

/* ---- TensorProto -> tj_tensor ---------------------------------------------------- */

static tj_tensor *read_tensor(pb *b, tj_onnx *m, const char **name_out)
{
    pb t;
    if (pb_bytes(b, &t, "TensorProto") != 0)
        return NULL;
    /* pass 1: dims count, dtype, name, where the data is */
    int64_t ndims = 0, onnx_type = 0, nvals = 0;
    int data_field = 0;
    const uint8_t *raw = NULL;
    size_t rawlen = 0;
    const char *name = "";
    pb s = t;
    uint32_t f;
    int w, rc;
    while ((rc = pb_tag(&s, &f, &w)) == 0) {
        uint64_t v;
        pb sub;
        if (f == 1) {
            int64_t c = pb_count_scalars(&s, w, 0);
            if (c < 0)
                return NULL;
            ndims += c;
        } else if (f == 2) {
            if (pb_expect(&s, w, 0, "data_type") || pb_varint(&s, &v))
                return NULL;
            onnx_type = (int64_t)v;
        } else if (f == 8) {
            if (pb_expect(&s, w, 2, "name") || !(name = pb_string(&s, m, "TensorProto.name")))
                return NULL;
        } else if (f == 9) {
            if (pb_expect(&s, w, 2, "raw_data") || pb_bytes(&s, &sub, "raw_data"))
                return NULL;
            raw = sub.p;
            rawlen = (size_t)(sub.end - sub.p);
            data_field = 9;
        } else if (f == 4 || f == 5 || f == 7 || f == 10) {
            int64_t c = pb_count_scalars(&s, w, f == 4 ? 5 : f == 10 ? 1 : 0);
            if (c < 0)
                return NULL;
            nvals += c;
            data_field = (int)f;
        } else if (f == 14) {
            if (pb_varint(&s, &v))
                return NULL;
            if (v == 1) {
                rt_error("onnx: %s: tensor '%s' keeps its data in an external file, which tjit does "
                         "not read (save the model with its data inside)", m->path, name);
                return NULL;
            }
        } else if (f == 6) {
            rt_error("onnx: %s: tensor '%s' holds strings, which tjit has no dtype for", m->path, name);
            return NULL;
        } else if (pb_skip(&s, w) != 0) {
            return NULL;
        }
    }
    if (rc < 0)
        return NULL;
    if (ndims > TJ_MAX_DIMS) {
        rt_error("onnx: %s: tensor '%s' has %lld dims (tjit takes at most %d)", m->path, name,
                 (long long)ndims, TJ_MAX_DIMS);
        return NULL;
    }
    int dt = ox_dtype(onnx_type);
    if (dt < 0) {
        rt_error("onnx: %s: tensor '%s' has data type %lld, which tjit does not support", m->path,
                 name, (long long)onnx_type);
        return NULL;
    }
    /* pass 2: dims and values */
    int64_t dims[TJ_MAX_DIMS], k = 0, numel = 1;
    s = t;
    while (pb_tag(&s, &f, &w) == 0) {
        if (f == 1) {
            if (pb_read_scalars(&s, w, 0, dims, NULL, &k) != 0)
                return NULL;
        } else if (pb_skip(&s, w) != 0) {
            return NULL;
        }
    }
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0 || (dims[i] && numel > INT64_MAX / dims[i])) {
            rt_error("onnx: %s: tensor '%s' has a bad dim %lld", m->path, name, (long long)dims[i]);
            return NULL;
        }
        numel *= dims[i];
    }
    size_t esize = tj_dtype_size((tj_dtype)dt);
    if (data_field == 9 ? rawlen != (size_t)numel * esize : nvals != numel) {
        rt_error("onnx: %s: tensor '%s' has %lld elements but %s of %zu", m->path, name,
                 (long long)numel, data_field == 9 ? "raw_data" : "a value list",
                 data_field == 9 ? rawlen : (size_t)nvals);
        return NULL;
    }
    tj_tensor *x = tj_empty((tj_dtype)dt, (int)ndims, dims);
    if (!x) {
        char why[512];
        snprintf(why, sizeof why, "%s", tj_last_error());
        rt_error("onnx: %s: tensor '%s': %s", m->path, name, why);
        return NULL;
    }
    uint8_t *dst = numel ? tj_data(x) : NULL;
    if (data_field == 9) {
        if (numel)
            memcpy(dst, raw, rawlen);   /* ONNX raw data is little endian, as is x86 */
    } else if (numel) {
        int64_t *iv = malloc((size_t)numel * sizeof *iv);
        double *fv = malloc((size_t)numel * sizeof *fv);
        int64_t n = 0;
        int err = !iv || !fv;
        s = t;
        while (!err && pb_tag(&s, &f, &w) == 0) {
            if (f == (uint32_t)data_field)
                err = pb_read_scalars(&s, w, f == 4 ? 5 : f == 10 ? 1 : 0, iv, f == 4 || f == 10 ? fv : NULL, &n) != 0;
            else
                err = pb_skip(&s, w) != 0;
        }
        for (int64_t i = 0; !err && i < numel; i++) {
            double d = data_field == 4 || data_field == 10 ? fv[i] : (double)iv[i];
            switch (dt) {
            case TJ_F32: ((float *)dst)[i] = (float)d; break;
            case TJ_F64: ((double *)dst)[i] = d; break;
            case TJ_I64: ((int64_t *)dst)[i] = iv[i]; break;
            case TJ_I32: ((int32_t *)dst)[i] = (int32_t)iv[i]; break;
            case TJ_I16: case TJ_F16: case TJ_BF16: ((int16_t *)dst)[i] = (int16_t)iv[i]; break;
            default: dst[i] = (uint8_t)iv[i]; break;
            }
        }
        free(iv);
        free(fv);
        if (err) {
            tj_release(x);
            if (!rt_has_error())
                rt_error("onnx: %s: out of memory", m->path);
            return NULL;
        }
    }
    if (name_out)
        *name_out = name;
    return x;
}

/* ---- AttributeProto, NodeProto ---------------------------------------------------- */

static int read_attr(pb *b, tj_onnx *m, ox_attr *a)
{
    pb s;
    if (pb_bytes(b, &s, "AttributeProto") != 0)
        return -1;
    pb c = s;
    uint32_t f;
    int w, rc;
    int64_t nints = 0, nfloats = 0;
    while ((rc = pb_tag(&c, &f, &w)) == 0) {
        int64_t n = 0;
        if (f == 7)
            n = nfloats += pb_count_scalars(&c, w, 5);
        else if (f == 8)
            n = nints += pb_count_scalars(&c, w, 0);
        else
            n = pb_skip(&c, w);
        if (n < 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    a->name = "";
    a->ints = nints ? ir_arena_alloc(&m->arena, (size_t)nints * sizeof *a->ints) : NULL;
    a->floats = nfloats ? ir_arena_alloc(&m->arena, (size_t)nfloats * sizeof *a->floats) : NULL;
    if ((nints && !a->ints) || (nfloats && !a->floats)) {
        rt_error("onnx: %s: out of memory", m->path);
        return -1;
    }
    int64_t ki = 0, kf = 0;
    while ((rc = pb_tag(&s, &f, &w)) == 0) {
        uint64_t v = 0;
        int err = 0;
        switch (f) {
        case 1: err = pb_expect(&s, w, 2, "name") || !(a->name = pb_string(&s, m, "AttributeProto.name")); break;
        case 2:
            if (!(err = pb_expect(&s, w, 5, "f")) && !(err = s.end - s.p < 4)) {
                float x;
                memcpy(&x, s.p, 4);
                s.p += 4;
                a->f = x;
            } else if (!rt_has_error()) {
                err = pb_fail(&s, "truncated float");
            }
            break;
        case 3: err = pb_expect(&s, w, 0, "i") || pb_varint(&s, &v); a->i = (int64_t)v; break;
        case 4: err = pb_expect(&s, w, 2, "s") || !(a->s = pb_string(&s, m, "AttributeProto.s")); break;
        case 5:
            err = pb_expect(&s, w, 2, "t") || !(a->t = read_tensor(&s, m, NULL));
            if (!err && !(a->t = tj_keep(a->t)))
                err = 1;
            break;
        case 7: err = pb_read_scalars(&s, w, 5, NULL, a->floats, &kf); break;
        case 8: err = pb_read_scalars(&s, w, 0, a->ints, NULL, &ki); break;
        case 20: err = pb_expect(&s, w, 0, "type") || pb_varint(&s, &v); a->type = (int)v; break;
        default: err = pb_skip(&s, w); break;
        }
        if (err)
            return -1;
    }
    a->n = a->type == OX_FLOATS ? (int)nfloats : (int)nints;
    if (a->t && !a->type)
        a->type = OX_TENSOR;
    return rc < 0 ? -1 : 0;
}

static int read_node(pb *b, tj_onnx *m, ox_node *n)
{
    pb s;
    if (pb_bytes(b, &s, "NodeProto") != 0)
        return -1;
    pb c = s;
    uint32_t f;
    int w, rc;
    while ((rc = pb_tag(&c, &f, &w)) == 0) {
        n->nin += f == 1;
        n->nout += f == 2;
        n->nattrs += f == 5;
        if (pb_skip(&c, w) != 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    n->in = ir_arena_calloc(&m->arena, (size_t)n->nin + 1, sizeof *n->in);
    n->out = ir_arena_calloc(&m->arena, (size_t)n->nout + 1, sizeof *n->out);
    n->attrs = ir_arena_calloc(&m->arena, (size_t)n->nattrs + 1, sizeof *n->attrs);
    if (!n->in || !n->out || !n->attrs) {
        rt_error("onnx: %s: out of memory", m->path);
        return -1;
    }
    int ki = 0, ko = 0, ka = 0;
    n->op = n->name = n->domain = "";
    while ((rc = pb_tag(&s, &f, &w)) == 0) {
        int err = 0;
        switch (f) {
        case 1: err = pb_expect(&s, w, 2, "input") || !(n->in[ki++] = pb_string(&s, m, "NodeProto.input")); break;
        case 2: err = pb_expect(&s, w, 2, "output") || !(n->out[ko++] = pb_string(&s, m, "NodeProto.output")); break;
        case 3: err = pb_expect(&s, w, 2, "name") || !(n->name = pb_string(&s, m, "NodeProto.name")); break;
        case 4: err = pb_expect(&s, w, 2, "op_type") || !(n->op = pb_string(&s, m, "NodeProto.op_type")); break;
        case 5: err = pb_expect(&s, w, 2, "attribute") || read_attr(&s, m, &n->attrs[ka++]); break;
        case 7: err = pb_expect(&s, w, 2, "domain") || !(n->domain = pb_string(&s, m, "NodeProto.domain")); break;
        default: err = pb_skip(&s, w); break;
        }
        if (err)
            return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* ---- ValueInfoProto (name, tensor type, shape) ------------------------------------ */

static int read_shape(pb *b, tj_onnx *m, ox_value_info *v)
{
    pb s;
    if (pb_bytes(b, &s, "TensorShapeProto") != 0)
        return -1;
    uint32_t f;
    int w, rc;
    v->ndim = 0;
    while ((rc = pb_tag(&s, &f, &w)) == 0) {
        if (f != 1) {
            if (pb_skip(&s, w) != 0)
                return -1;
            continue;
        }
        pb d;
        if (pb_expect(&s, w, 2, "dim") || pb_bytes(&s, &d, "Dimension"))
            return -1;
        if (v->ndim == TJ_MAX_DIMS) {
            rt_error("onnx: %s: input or output '%s' has more than %d dims", m->path, v->name, TJ_MAX_DIMS);
            return -1;
        }
        int k = v->ndim++;
        v->dims[k] = -1;
        uint32_t g;
        int dw, drc;
        while ((drc = pb_tag(&d, &g, &dw)) == 0) {
            uint64_t x;
            if (g == 1) {
                if (pb_expect(&d, dw, 0, "dim_value") || pb_varint(&d, &x))
                    return -1;
                v->dims[k] = (int64_t)x;
            } else if (g == 2) {
                if (pb_expect(&d, dw, 2, "dim_param") || !(v->dim_param[k] = pb_string(&d, m, "dim_param")))
                    return -1;
            } else if (pb_skip(&d, dw) != 0) {
                return -1;
            }
        }
        if (drc < 0)
            return -1;
    }
    return rc < 0 ? -1 : 0;
}

static int read_value_info(pb *b, tj_onnx *m, ox_value_info *v)
{
    pb s;
    if (pb_bytes(b, &s, "ValueInfoProto") != 0)
        return -1;
    v->name = "";
    v->dtype = -1;
    v->ndim = -1;
    uint32_t f;
    int w, rc;
    while ((rc = pb_tag(&s, &f, &w)) == 0) {
        if (f == 1) {
            if (pb_expect(&s, w, 2, "name") || !(v->name = pb_string(&s, m, "ValueInfoProto.name")))
                return -1;
        } else if (f == 2) {   /* TypeProto: tensor_type (1): elem_type (1), shape (2) */
            pb t, tt;
            uint32_t g;
            int tw, trc;
            if (pb_expect(&s, w, 2, "type") || pb_bytes(&s, &t, "TypeProto"))
                return -1;
            while ((trc = pb_tag(&t, &g, &tw)) == 0) {
                if (g != 1) {
                    if (pb_skip(&t, tw) != 0)
                        return -1;
                    continue;
                }
                if (pb_expect(&t, tw, 2, "tensor_type") || pb_bytes(&t, &tt, "TypeProto.Tensor"))
                    return -1;
                uint32_t h;
                int hw, hrc;
                while ((hrc = pb_tag(&tt, &h, &hw)) == 0) {
                    uint64_t x;
                    if (h == 1) {
                        if (pb_expect(&tt, hw, 0, "elem_type") || pb_varint(&tt, &x))
                            return -1;
                        v->dtype = ox_dtype((int64_t)x);
                    } else if (h == 2) {
                        if (read_shape(&tt, m, v) != 0)
                            return -1;
                    } else if (pb_skip(&tt, hw) != 0) {
                        return -1;
                    }
                }
                if (hrc < 0)
                    return -1;
            }
            if (trc < 0)
                return -1;
        } else if (pb_skip(&s, w) != 0) {
            return -1;
        }
    }
    return rc < 0 ? -1 : 0;
}

/* ---- GraphProto, ModelProto -------------------------------------------------------- */

static int read_graph(pb *b, tj_onnx *m)
{
    pb s;
    if (pb_bytes(b, &s, "GraphProto") != 0)
        return -1;
    pb c = s;
    uint32_t f;
    int w, rc, nin = 0;
    while ((rc = pb_tag(&c, &f, &w)) == 0) {
        m->nnodes += f == 1;
        m->ninits += f == 5;
        nin += f == 11;
        m->noutputs += f == 12;
        if (f == 15 || f == 16) {
            rt_error("onnx: %s: the graph has sparse initializers, which tjit does not read", m->path);
            return -1;
        }
        if (pb_skip(&c, w) != 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    m->nodes = ir_arena_calloc(&m->arena, (size_t)m->nnodes + 1, sizeof *m->nodes);
    m->init_names = ir_arena_calloc(&m->arena, (size_t)m->ninits + 1, sizeof *m->init_names);
    m->inits = calloc((size_t)m->ninits + 1, sizeof *m->inits);
    m->inputs = ir_arena_calloc(&m->arena, (size_t)nin + 1, sizeof *m->inputs);
    m->outputs = ir_arena_calloc(&m->arena, (size_t)m->noutputs + 1, sizeof *m->outputs);
    if (!m->nodes || !m->init_names || !m->inits || !m->inputs || !m->outputs) {
        rt_error("onnx: %s: out of memory", m->path);
        return -1;
    }
    int kn = 0, kinit = 0, ko = 0;
    while ((rc = pb_tag(&s, &f, &w)) == 0) {
        int err = 0;
        if (f == 1) {
            err = pb_expect(&s, w, 2, "node") || read_node(&s, m, &m->nodes[kn++]);
        } else if (f == 5) {
            tj_tensor *t = NULL;
            err = pb_expect(&s, w, 2, "initializer") ||
                  !(t = read_tensor(&s, m, &m->init_names[kinit]));
            if (!err && !(m->inits[kinit++] = tj_keep(t)))
                err = 1;
        } else if (f == 11) {
            err = pb_expect(&s, w, 2, "input") || read_value_info(&s, m, &m->inputs[m->ninputs++]);
        } else if (f == 12) {
            err = pb_expect(&s, w, 2, "output") || read_value_info(&s, m, &m->outputs[ko++]);
        } else {
            err = pb_skip(&s, w);
        }
        if (err)
            return -1;
    }
    if (rc < 0)
        return -1;
    /* graph inputs that are initializers (older exporters list both) are weights */
    int keep = 0;
    for (int i = 0; i < m->ninputs; i++) {
        bool is_init = false;
        for (int k = 0; k < m->ninits && !is_init; k++)
            is_init = !strcmp(m->init_names[k], m->inputs[i].name);
        if (!is_init)
            m->inputs[keep++] = m->inputs[i];
    }
    m->ninputs = keep;
    return 0;
}

int ox_parse(tj_onnx *m, const uint8_t *data, size_t n)
{
    pb b = {data, data + n, data, m, "ModelProto"};
    uint32_t f;
    int w, rc;
    bool graph = false;
    m->opset = -1;
    while ((rc = pb_tag(&b, &f, &w)) == 0) {
        int err = 0;
        if (f == 7) {
            if (graph)
                return pb_fail(&b, "a second graph");
            err = pb_expect(&b, w, 2, "graph") || read_graph(&b, m);
            graph = true;
        } else if (f == 8) {   /* OperatorSetIdProto: domain (1), version (2) */
            pb o;
            const char *domain = "";
            int64_t version = -1;
            err = pb_expect(&b, w, 2, "opset_import") || pb_bytes(&b, &o, "OperatorSetIdProto");
            uint32_t g;
            int ow;
            while (!err && pb_tag(&o, &g, &ow) == 0) {
                uint64_t v = 0;
                if (g == 1)
                    err = pb_expect(&o, ow, 2, "domain") || !(domain = pb_string(&o, m, "domain"));
                else if (g == 2) {
                    err = pb_expect(&o, ow, 0, "version") || pb_varint(&o, &v);
                    version = (int64_t)v;
                } else
                    err = pb_skip(&o, ow);
            }
            if (!err && (!domain[0] || !strcmp(domain, "ai.onnx")))
                m->opset = version;
        } else {
            err = pb_skip(&b, w);
        }
        if (err)
            return -1;
    }
    if (rc < 0)
        return -1;
    if (!graph) {
        rt_error("onnx: %s: no graph in the file (not an ONNX model?)", m->path);
        return -1;
    }
    return 0;
}

const ox_attr *ox_attr_get(const ox_node *n, const char *name)
{
    for (int k = 0; k < n->nattrs; k++)
        if (!strcmp(n->attrs[k].name, name))
            return &n->attrs[k];
    return NULL;
}
