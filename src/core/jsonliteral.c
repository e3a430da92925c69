/* SPDX-License-Identifier: Apache-2.0 */
#include <stdatomic.h>
#include <stdint.h>

#include "xpool/jsonliteral.h"
#include "xpool/sharedtree.h"

/* More than the program's literals that reach a tree (a few dozen): past it, or after MAX_PROBES
 * taken slots, a literal gets a node of its own each time, as before. */
#define SLOTS      512
#define MAX_PROBES 16

/* A slot is claimed by its key once and keeps it: readers need no lock. A value still NULL is
 * being made by the thread that claimed it (or could not be made): others make their own. */
struct slot {
        _Atomic(const char *) key;
        _Atomic(json_t *) value;
};

static struct slot slots[SLOTS];

static size_t slot_of(const char *literal)
{
        return (size_t)(((uintptr_t)literal >> 3) * UINT64_C(0x9e3779b97f4a7c15) >> 32) % SLOTS;
}

static json_t *claimed(struct slot *s, const char *literal)
{
        json_t *node = json_string_nocheck(literal);

        /* the table's reference, kept for the process's life */
        atomic_store_explicit(&s->value, node, memory_order_release);
        return json_incref(node);
}

json_t *xp_json_literal(const char *literal)
{
        size_t first = slot_of(literal);

        for (size_t probe = 0; probe < MAX_PROBES; probe++) {
                struct slot *s = &slots[(first + probe) % SLOTS];
                const char *key = atomic_load_explicit(&s->key, memory_order_acquire);
                json_t *node;

                if (!key && atomic_compare_exchange_strong_explicit(
                                &s->key, &key, literal, memory_order_acq_rel, memory_order_acquire))
                        return claimed(s, literal);
                if (key != literal)
                        continue; /* another literal's, or another thread took it first */
                node = atomic_load_explicit(&s->value, memory_order_acquire);
                return node ? json_incref(node) : json_string_nocheck(literal);
        }
        return json_string_nocheck(literal);
}

static _Atomic(json_t *) small_integers[XP_JSON_SHARED_INTEGERS];

json_t *xp_json_integer(json_int_t value)
{
        json_t *node, *made, *expected = NULL;

        if (value < 0 || value >= XP_JSON_SHARED_INTEGERS)
                return json_integer(value);
        node = atomic_load_explicit(&small_integers[value], memory_order_acquire);
        if (node)
                return json_incref(node);
        made = json_integer(value);
        if (!made)
                return NULL;
        /* made's reference becomes the table's; a thread that lost the race uses the winner's */
        if (atomic_compare_exchange_strong_explicit(&small_integers[value],
                                                    &expected,
                                                    made,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire))
                return json_incref(made);
        json_decref(made);
        return json_incref(expected);
}

void xp_json_shared_tree_mark(const json_t *tree)
{
        xp_shared_tree_add(tree);
}

bool xp_json_is_shared_tree(const json_t *json)
{
        return xp_shared_tree_index(json) >= 0;
}
