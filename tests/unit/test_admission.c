/* SPDX-License-Identifier: Apache-2.0 */
/* Admission (src/server/admission.c): NodeRestriction's label rules and answers, and a bound
 * pod's nodeName. The HTTP side is tests/integration/20-admission.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/admission.h"
#include "server/auth.h"
#include "xpool/kind.h"

static void kubelet_labels_are_allowed_and_steering_ones_not(void **state)
{
        static const char *const allowed[] = {
            "kubernetes.io/hostname",
            "kubernetes.io/os",
            "kubernetes.io/arch",
            "beta.kubernetes.io/os",
            "beta.kubernetes.io/arch",
            "beta.kubernetes.io/instance-type",
            "node.kubernetes.io/instance-type",
            "topology.kubernetes.io/zone",
            "topology.kubernetes.io/region",
            "failure-domain.beta.kubernetes.io/zone",
            "failure-domain.beta.kubernetes.io/region",
            "kubelet.kubernetes.io/anything",
            "x.kubelet.kubernetes.io/anything",
            "node.kubernetes.io/exclude-from-external-load-balancers",
            "feature.node.kubernetes.io/cpu",
            "xpool.io/agent",
            "example.com/rack",
            "plain",
            "notkubernetes.io/x", /* not a subdomain of kubernetes.io */
            "kubernetes.io.example.com/x",
        };
        static const char *const forbidden[] = {
            "node-restriction.kubernetes.io/pool",
            "team.node-restriction.kubernetes.io/a",
            "node-role.kubernetes.io/gpu",
            "node-role.kubernetes.io/control-plane",
            "kubernetes.io/role",
            "kubernetes.io/hostname2",
            "topology.kubernetes.io/rack",
            "k8s.io/anything",
            "x.k8s.io/anything",
            "beta.kubernetes.io/fluentd-ds-ready",
        };

        (void)state;
        for (size_t i = 0; i < sizeof(allowed) / sizeof(*allowed); i++)
                if (admission_node_label_forbidden(allowed[i]))
                        fail_msg("%s is forbidden", allowed[i]);
        for (size_t i = 0; i < sizeof(forbidden) / sizeof(*forbidden); i++)
                if (!admission_node_label_forbidden(forbidden[i]))
                        fail_msg("%s is allowed", forbidden[i]);
}

static const struct auth_identity node_n1 = {.role = XP_TOKEN_NODE, .subject = "n1"};
static const struct auth_identity an_admin = {.role = XP_TOKEN_ADMIN, .subject = "admin"};

/* admission_check() of object (over stored at version 7, or a create) as who: 1, or the answer's
 * code with its message in *msg. */
static int admit(const struct auth_identity *who,
                 const struct xp_kind *kind,
                 const char *stored,
                 uint64_t expected,
                 const char *object,
                 const char **msg)
{
        static char message[4096];
        struct request req = {.who = who};
        struct reply reply = {0};
        json_t *old = stored ? json_loads(stored, 0, NULL) : NULL;
        json_t *now = json_loads(object, 0, NULL);
        int r;

        assert_non_null(now);
        assert_true(!stored || old);
        r = admission_check(&req, kind, old, expected, now, &reply);
        message[0] = '\0';
        if (r == 0) {
                snprintf(message,
                         sizeof(message),
                         "%s",
                         json_string_value(json_object_get(reply.body, "message")));
                r = (int)reply.code;
        }
        *msg = message;
        json_decref(reply.body);
        json_decref(old);
        json_decref(now);
        return r;
}

#define STORED_NODE                                                                                \
        "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"7\",\"labels\":{\"node-role.kubernetes.io/gpu\":\"\",\"kubernetes.io/hostname\":\"h\"}},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}}"

static void nodes_keep_their_taints_and_steering_labels(void **state)
{
        const char *msg;

        (void)state;
        assert_int_equal(
            admit(
                &node_n1,
                &xp_kind_node,
                STORED_NODE,
                7,
                "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"node-role.kubernetes.io/gpu\":\"\",\"kubernetes.io/hostname\":\"h\"}}}",
                &msg),
            403);
        assert_string_equal(
            msg, "nodes \"n1\" is forbidden: node \"n1\" is not allowed to modify taints");
        assert_int_equal(
            admit(
                &node_n1,
                &xp_kind_node,
                STORED_NODE,
                7,
                "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"kubernetes.io/hostname\":\"h\",\"k8s.io/b\":\"x\",\"a.node-restriction.kubernetes.io/c\":\"y\"}},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}}",
                &msg),
            403);
        assert_string_equal(
            msg,
            "nodes \"n1\" is forbidden: is not allowed to modify labels: a.node-restriction.kubernetes.io/c, k8s.io/b, node-role.kubernetes.io/gpu");
        /* its own labels are its own; the same taints pass */
        assert_int_equal(
            admit(
                &node_n1,
                &xp_kind_node,
                STORED_NODE,
                7,
                "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"node-role.kubernetes.io/gpu\":\"\",\"kubernetes.io/hostname\":\"h2\",\"rack\":\"r\"}},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}}",
                &msg),
            1);
        /* a stale write is the store's to refuse, and an admin may do anything */
        assert_int_equal(
            admit(
                &node_n1, &xp_kind_node, STORED_NODE, 6, "{\"metadata\":{\"name\":\"n1\"}}", &msg),
            1);
        assert_int_equal(
            admit(
                &an_admin, &xp_kind_node, STORED_NODE, 7, "{\"metadata\":{\"name\":\"n1\"}}", &msg),
            1);
        /* no taints and an empty list are the same */
        assert_int_equal(
            admit(
                &node_n1,
                &xp_kind_node,
                "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"7\"},\"spec\":{\"taints\":[]}}",
                7,
                "{\"metadata\":{\"name\":\"n1\"},\"spec\":{}}",
                &msg),
            1);
        /* a new configSource */
        assert_int_equal(
            admit(
                &node_n1,
                &xp_kind_node,
                STORED_NODE,
                7,
                "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"node-role.kubernetes.io/gpu\":\"\",\"kubernetes.io/hostname\":\"h\"}},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}],\"configSource\":{\"configMap\":{\"name\":\"c\"}}}}",
                &msg),
            403);
        assert_string_equal(
            msg,
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to update configSource to a new non-nil configSource");
}

static void nodes_register_with_kubelet_labels_only(void **state)
{
        const char *msg;

        (void)state;
        assert_int_equal(
            admit(
                &node_n1,
                &xp_kind_node,
                NULL,
                0,
                "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"kubernetes.io/os\":\"linux\",\"xpool.io/agent\":\"true\"}},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}}",
                &msg),
            1);
        assert_int_equal(
            admit(
                &node_n1,
                &xp_kind_node,
                NULL,
                0,
                "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"node-role.kubernetes.io/b\":\"\",\"node-role.kubernetes.io/a\":\"\"}}}",
                &msg),
            403);
        assert_string_equal(
            msg,
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to set the following labels: node-role.kubernetes.io/a, node-role.kubernetes.io/b");
        assert_int_equal(admit(&node_n1,
                               &xp_kind_node,
                               NULL,
                               0,
                               "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"configSource\":{}}}",
                               &msg),
                         403);
        assert_string_equal(
            msg,
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to create pods with a non-nil configSource");
}

#define BOUND_POD                                                                                  \
        "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"7\"},\"spec\":{\"nodeName\":\"n1\"}}"

static void bound_pods_keep_their_node(void **state)
{
        const char *msg;

        (void)state;
        assert_int_equal(admit(&an_admin,
                               &xp_kind_pod,
                               BOUND_POD,
                               7,
                               "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n2\"}}",
                               &msg),
                         422);
        assert_non_null(strstr(
            msg,
            "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"));
        assert_non_null(strstr(msg, "- \tNodeName: \"n1\",\n+ \tNodeName: \"n2\",\n"));
        assert_int_equal(admit(&an_admin,
                               &xp_kind_pod,
                               BOUND_POD,
                               7,
                               "{\"metadata\":{\"name\":\"p\"},\"spec\":{}}",
                               &msg),
                         422);
        assert_non_null(strstr(msg, "+ \tNodeName: \"\",\n"));
        assert_int_equal(admit(&an_admin,
                               &xp_kind_pod,
                               BOUND_POD,
                               7,
                               "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\"}}",
                               &msg),
                         1);
        /* an unbound pod: the rest of the immutability rules are not here yet */
        assert_int_equal(
            admit(&an_admin,
                  &xp_kind_pod,
                  "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"7\"},\"spec\":{}}",
                  7,
                  "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n2\"}}",
                  &msg),
            1);
        assert_int_equal(admit(&an_admin,
                               &xp_kind_pod,
                               NULL,
                               0,
                               "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n2\"}}",
                               &msg),
                         1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(kubelet_labels_are_allowed_and_steering_ones_not),
            cmocka_unit_test(nodes_keep_their_taints_and_steering_labels),
            cmocka_unit_test(nodes_register_with_kubelet_labels_only),
            cmocka_unit_test(bound_pods_keep_their_node),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
