/* test_optable.c - walks every row of ir/ops.def (ir_ops[]) and checks that the
 * tables generated from it are whole: a name, a kind, an arity, an attribute
 * schema, a dtype rule for the pointwise rows, an eager kernel for every
 * non-view op, name lookups that round-trip, and docs/ops.md (made by
 * `make docs`) listing every op. Runs from the repository root. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/ir.h"
#include "../passes/rewrite.h"
#include "../runtime/rt.h"
#include "util.h"

static bool is_identifier(const char *s)
{
    if (!s || !*s || !islower((unsigned char)s[0]))
        return false;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static void test_names(void **state)
{
    (void)state;
    assert_true(IR_NUM_OPS > 0);
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const char *name = ir_ops[op].name;
        if (!is_identifier(name))
            fail_msg("op %d: bad name '%s'", op, name ? name : "(null)");
        for (int other = 0; other < op; other++)
            if (!strcmp(ir_ops[other].name, name))
                fail_msg("op name '%s' appears twice (rows %d and %d)", name, other, op);
    }
}

static void test_name_lookup(void **state)
{
    (void)state;
    for (int op = 0; op < IR_NUM_OPS; op++)
        if (ir_op_from_name(ir_ops[op].name) != (ir_op)op)
            fail_msg("ir_op_from_name(\"%s\") != %d", ir_ops[op].name, op);
    assert_int_equal(ir_op_from_name("no_such_op"), IR_NUM_OPS);
    assert_int_equal(ir_op_from_name(""), IR_NUM_OPS);
}

static void test_kinds(void **state)
{
    (void)state;
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_opinfo *o = &ir_ops[op];
        if ((unsigned)o->kind > IR_RANDOM || !strcmp(ir_kind_name(o->kind), "?"))
            fail_msg("op %s: bad kind %d", o->name, (int)o->kind);
        bool pointwise_row = o->kind == IR_UNARY || o->kind == IR_BINARY;
        if (pointwise_row && (o->rule == IR_RULE_NONE || o->rule > IR_RULE_LAST))
            fail_msg("op %s: pointwise row without a dtype rule", o->name);
        if (!pointwise_row && o->rule != IR_RULE_NONE)
            fail_msg("op %s: dtype rule on a non-pointwise row", o->name);
    }
    assert_string_equal(ir_kind_name((ir_kind)999), "?");
}

static void test_arity(void **state)
{
    (void)state;
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_opinfo *o = &ir_ops[op];
        if (o->nmin < 0 || (o->nmax != -1 && o->nmax < o->nmin) || o->nmax > 16)
            fail_msg("op %s: bad arity %d..%d", o->name, o->nmin, o->nmax);
        if (o->kind == IR_UNARY && (o->nmin != 1 || o->nmax != 1))
            fail_msg("unary op %s takes %d..%d inputs", o->name, o->nmin, o->nmax);
        if (o->kind == IR_BINARY && (o->nmin != 2 || o->nmax != 2))
            fail_msg("binary op %s takes %d..%d inputs", o->name, o->nmin, o->nmax);
        if (o->kind == IR_TERNARY && (o->nmin != 3 || o->nmax != 3))
            fail_msg("ternary op %s takes %d..%d inputs", o->name, o->nmin, o->nmax);
        if (o->kind == IR_VIEW && (o->nmin != 1 || o->nmax != 1))
            fail_msg("view op %s must take one input", o->name);
    }
}

static void test_attrs(void **state)
{
    (void)state;
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_opinfo *o = &ir_ops[op];
        if (o->nattrs < 0 || o->nattrs > IR_MAX_ATTRS)
            fail_msg("op %s: %d attributes (max %d)", o->name, o->nattrs, IR_MAX_ATTRS);
        for (int k = 0; k < o->nattrs; k++) {
            const ir_attr_desc *d = &o->attrs[k];
            if (!is_identifier(d->name))
                fail_msg("op %s: attribute %d has a bad name", o->name, k);
            if ((unsigned)d->kind > IR_ATTR_LAST)
                fail_msg("op %s: attribute %s has bad kind %d", o->name, d->name, (int)d->kind);
            for (int j = 0; j < k; j++)
                if (!strcmp(o->attrs[j].name, d->name))
                    fail_msg("op %s: attribute %s appears twice", o->name, d->name);
        }
        for (int k = o->nattrs; k < IR_MAX_ATTRS; k++)
            if (o->attrs[k].name)
                fail_msg("op %s: attribute slot %d set past nattrs", o->name, k);
    }
}

static void test_kernels(void **state)
{
    (void)state;
    for (int op = 0; op < IR_NUM_OPS; op++) {
        bool view = ir_ops[op].kind == IR_VIEW;
        if (ir_ops[op].eager_decomp) {   /* DCOMP: its decomposition runs instead */
            if (rt_kernels[op] || ir_ops[op].prim || !ps_has_decomposition((ir_op)op))
                fail_msg("DCOMP op %s has a kernel, is a prim or has no decomposition",
                         ir_ops[op].name);
            continue;
        }
        if (!view && !rt_kernels[op])
            fail_msg("op %s has no eager kernel in rt_kernels", ir_ops[op].name);
        if (view && rt_kernels[op])
            fail_msg("view op %s has a kernel (views are made by rt_view_op)", ir_ops[op].name);
    }
}

/* docs/ops.md as one string (freed by the caller); fails the test when absent. */
static char *read_doc(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run `make docs` from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    size_t got = fread(s, 1, (size_t)n, f);
    fclose(f);
    s[got] = '\0';
    return s;
}

static void test_docs_list_every_op(void **state)
{
    (void)state;
    char *doc = read_doc("docs/ops.md");
    char want[96];
    snprintf(want, sizeof want, "\n%d ops.\n", IR_NUM_OPS);
    bool count_ok = strstr(doc, want) != NULL;
    int missing = -1;
    for (int op = 0; op < IR_NUM_OPS && missing < 0; op++) {
        snprintf(want, sizeof want, "| `%s` |", ir_ops[op].name);
        if (!strstr(doc, want))
            missing = op;
    }
    free(doc);
    if (!count_ok)
        fail_msg("docs/ops.md does not say \"%d ops.\": run `make docs`", IR_NUM_OPS);
    if (missing >= 0)
        fail_msg("docs/ops.md lacks op %s: run `make docs`", ir_ops[missing].name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_names, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_name_lookup, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_kinds, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_arity, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_attrs, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_kernels, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_docs_list_every_op, tu_scope_setup,
                                        tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
