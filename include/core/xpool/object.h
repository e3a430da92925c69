/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The object model: the subset of Kubernetes v1 Pod and Node that xpool uses, plus xpool's device
 * inventory carried in a Node's status. Field names follow the Kubernetes API (camelCase in JSON,
 * snake_case here). Every struct that maps a JSON object keeps the members it does not model in
 * `extra` (owned, may be NULL) so that what a client sent (kubectl sends more than we model)
 * comes back out unchanged.
 *
 * Conventions:
 *   - strings are owned `char *`, NULL when absent;
 *   - XP_LIST(T, name) is `struct { T *items; size_t n; } name`, owned;
 *   - timestamps are seconds since the epoch, 0 when absent (RFC 3339 in JSON);
 *   - enums start with an "unset" value 0 that is left out of JSON;
 *   - xp_opt_* distinguish "absent" from zero where Kubernetes does (pointer fields in Go).
 *
 * Objects are built by decoding (codec.h, manifest.h) and released with xp_pod_free() /
 * xp_node_free(); embedded structs with the matching _done().
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/resource.h"
#include "xpool/strmap.h"

#define XP_LIST(type, name)                                                                        \
        struct {                                                                                   \
                type *items;                                                                       \
                size_t n;                                                                          \
        } name

struct xp_opt_int64 {
        bool set;
        int64_t value;
};

struct xp_opt_bool {
        bool set;
        bool value;
};

/* ---- metadata ---------------------------------------------------------------------------- */

struct xp_object_meta {
        char *name;
        char *generate_name;
        char *namespace;
        char *uid;
        char *resource_version;
        int64_t generation;
        struct xp_strmap labels;
        struct xp_strmap annotations;
        int64_t creation_timestamp;
        int64_t deletion_timestamp;
        struct xp_opt_int64 deletion_grace_period_seconds;
        XP_LIST(char *, finalizers);
        json_t *extra; /* ownerReferences, managedFields, ... */
};

/* ---- selectors and affinity ---------------------------------------------------------------- */

enum xp_selector_op {
        XP_SELECTOR_OP_UNSET,
        XP_SELECTOR_OP_IN,
        XP_SELECTOR_OP_NOT_IN,
        XP_SELECTOR_OP_EXISTS,
        XP_SELECTOR_OP_DOES_NOT_EXIST,
        XP_SELECTOR_OP_GT, /* node selectors only */
        XP_SELECTOR_OP_LT, /* node selectors only */
};

struct xp_selector_requirement {
        char *key;
        enum xp_selector_op op;
        XP_LIST(char *, values);
        json_t *extra;
};

struct xp_label_selector {
        struct xp_strmap match_labels;
        XP_LIST(struct xp_selector_requirement, match_expressions);
        json_t *extra;
};

struct xp_node_selector_term {
        XP_LIST(struct xp_selector_requirement, match_expressions);
        XP_LIST(struct xp_selector_requirement, match_fields);
        json_t *extra;
};

struct xp_node_selector {
        XP_LIST(struct xp_node_selector_term, terms);
        json_t *extra;
};

struct xp_preferred_scheduling_term {
        int64_t weight; /* 1..100 */
        struct xp_node_selector_term preference;
        json_t *extra;
};

struct xp_node_affinity {
        struct xp_node_selector *required; /* NULL when absent */
        XP_LIST(struct xp_preferred_scheduling_term, preferred);
        json_t *extra;
};

struct xp_pod_affinity_term {
        struct xp_label_selector *label_selector; /* NULL: matches no pod */
        XP_LIST(char *, namespaces);
        char *topology_key;
        struct xp_label_selector *namespace_selector;
        json_t *extra;
};

struct xp_weighted_pod_affinity_term {
        int64_t weight; /* 1..100 */
        struct xp_pod_affinity_term term;
        json_t *extra;
};

/* The same shape serves podAffinity and podAntiAffinity. */
struct xp_pod_affinity {
        XP_LIST(struct xp_pod_affinity_term, required);
        XP_LIST(struct xp_weighted_pod_affinity_term, preferred);
        json_t *extra;
};

struct xp_affinity {
        struct xp_node_affinity *node_affinity;
        struct xp_pod_affinity *pod_affinity;
        struct xp_pod_affinity *pod_anti_affinity;
        json_t *extra;
};

/* ---- taints and tolerations ---------------------------------------------------------------- */

enum xp_taint_effect {
        XP_TAINT_EFFECT_UNSET, /* in a toleration: every effect */
        XP_TAINT_EFFECT_NO_SCHEDULE,
        XP_TAINT_EFFECT_PREFER_NO_SCHEDULE,
        XP_TAINT_EFFECT_NO_EXECUTE,
};

enum xp_toleration_op {
        XP_TOLERATION_OP_UNSET, /* means Equal */
        XP_TOLERATION_OP_EQUAL,
        XP_TOLERATION_OP_EXISTS,
};

struct xp_toleration {
        char *key;
        enum xp_toleration_op op;
        char *value;
        enum xp_taint_effect effect;
        struct xp_opt_int64 toleration_seconds;
        json_t *extra;
};

struct xp_taint {
        char *key;
        char *value;
        enum xp_taint_effect effect;
        int64_t time_added;
        json_t *extra;
};

/* ---- pod ----------------------------------------------------------------------------------- */

struct xp_env_var {
        char *name;
        char *value;
        json_t *extra; /* valueFrom, kept as sent */
};

struct xp_resource_requirements {
        struct xp_resource_list limits;
        struct xp_resource_list requests;
        json_t *extra;
};

/* securityContext.capabilities: Linux capability names without CAP_, or ALL. */
struct xp_capabilities {
        XP_LIST(char *, add);
        XP_LIST(char *, drop);
        json_t *extra;
};

enum xp_seccomp_type {
        XP_SECCOMP_UNSET,
        XP_SECCOMP_RUNTIME_DEFAULT,
        XP_SECCOMP_UNCONFINED,
        XP_SECCOMP_LOCALHOST,
};

struct xp_seccomp_profile {
        enum xp_seccomp_type type; /* required */
        char *localhost_profile;   /* required for Localhost, forbidden otherwise */
        json_t *extra;
};

struct xp_security_context {
        struct xp_opt_int64 run_as_user;
        struct xp_opt_int64 run_as_group;
        struct xp_opt_bool run_as_non_root;
        struct xp_opt_bool privileged;                 /* containers only */
        struct xp_opt_bool allow_privilege_escalation; /* containers only */
        struct xp_capabilities *capabilities;          /* containers only */
        struct xp_opt_bool read_only_root_filesystem;  /* containers only */
        struct xp_seccomp_profile *seccomp_profile;
        json_t *extra;
};

enum xp_pull_policy {
        XP_PULL_UNSET, /* Always for :latest or no tag, else IfNotPresent */
        XP_PULL_ALWAYS,
        XP_PULL_IF_NOT_PRESENT,
        XP_PULL_NEVER,
};

struct xp_container {
        char *name;
        char *image;
        XP_LIST(char *, command);
        XP_LIST(char *, args);
        char *working_dir;
        XP_LIST(struct xp_env_var, env);
        struct xp_resource_requirements resources;
        enum xp_pull_policy image_pull_policy;
        struct xp_security_context *security_context;
        json_t *extra; /* ports, volumeMounts, probes, ... */
};

enum xp_restart_policy {
        XP_RESTART_UNSET, /* means Always */
        XP_RESTART_ALWAYS,
        XP_RESTART_ON_FAILURE,
        XP_RESTART_NEVER,
};

struct xp_pod_spec {
        XP_LIST(struct xp_container, init_containers);
        XP_LIST(struct xp_container, containers);
        enum xp_restart_policy restart_policy;
        struct xp_opt_int64 termination_grace_period_seconds;
        struct xp_opt_int64 active_deadline_seconds;
        struct xp_strmap node_selector;
        char *node_name;
        char *scheduler_name;
        char *priority_class_name;
        struct xp_opt_int64 priority;
        struct xp_affinity *affinity;
        XP_LIST(struct xp_toleration, tolerations);
        struct xp_security_context *security_context;
        json_t *extra; /* volumes, hostNetwork, ... */
};

enum xp_pod_phase {
        XP_POD_PHASE_UNSET,
        XP_POD_PENDING,
        XP_POD_RUNNING,
        XP_POD_SUCCEEDED,
        XP_POD_FAILED,
        XP_POD_UNKNOWN,
};

enum xp_condition_status {
        XP_CONDITION_UNSET,
        XP_CONDITION_TRUE,
        XP_CONDITION_FALSE,
        XP_CONDITION_UNKNOWN,
};

/* One shape for Pod and Node conditions; lastProbeTime is a Pod field, lastHeartbeatTime a Node
 * one. */
struct xp_condition {
        char *type;
        enum xp_condition_status status;
        int64_t last_probe_time;
        int64_t last_heartbeat_time;
        int64_t last_transition_time;
        char *reason;
        char *message;
        json_t *extra;
};

struct xp_container_state_waiting {
        char *reason;
        char *message;
        json_t *extra;
};

struct xp_container_state_running {
        int64_t started_at;
        json_t *extra;
};

struct xp_container_state_terminated {
        int64_t exit_code;
        int64_t signal;
        char *reason; /* Completed, Error, OOMKilled, ... */
        char *message;
        int64_t started_at;
        int64_t finished_at;
        char *container_id;
        json_t *extra;
};

/* At most one member is set. */
struct xp_container_state {
        struct xp_container_state_waiting *waiting;
        struct xp_container_state_running *running;
        struct xp_container_state_terminated *terminated;
        json_t *extra;
};

struct xp_container_status {
        char *name;
        struct xp_container_state state;
        struct xp_container_state last_state;
        bool ready;
        int64_t restart_count;
        char *image;
        char *image_id;
        char *container_id;
        struct xp_opt_bool started;
        json_t *extra;
};

struct xp_pod_status {
        enum xp_pod_phase phase;
        XP_LIST(struct xp_condition, conditions);
        char *message;
        char *reason;
        char *nominated_node_name;
        char *host_ip;
        char *pod_ip;
        int64_t start_time;
        XP_LIST(struct xp_container_status, init_container_statuses);
        XP_LIST(struct xp_container_status, container_statuses);
        char *qos_class;
        json_t *extra;
};

struct xp_pod {
        struct xp_object_meta metadata;
        struct xp_pod_spec spec;
        struct xp_pod_status status;
        json_t *extra;
};

/* ---- devices (xpool's own, carried in a Node's status.xpool) ------------------------------- */

enum xp_device_kind {
        XP_DEVICE_KIND_UNSET,
        XP_DEVICE_GPU,
        XP_DEVICE_NPU,
        XP_DEVICE_FPGA,
        XP_DEVICE_VPU,
        XP_DEVICE_ACCELERATOR, /* any other PCI accelerator */
};

/* Connection between two devices, the levels of `nvidia-smi topo -m`, best first. */
enum xp_link_level {
        XP_LINK_UNSET,
        XP_LINK_NVLINK, /* NV#: a direct high-speed link (NVLink, Infinity Fabric, HCCS) */
        XP_LINK_PIX,    /* at most one PCIe switch between them */
        XP_LINK_PXB,    /* several PCIe switches, no host bridge */
        XP_LINK_PHB,    /* through one PCIe host bridge */
        XP_LINK_NODE,   /* across host bridges within one NUMA node */
        XP_LINK_SYS,    /* across NUMA nodes (the SMP interconnect) */
};

/* As the kubelet's device plugin API says it; a device whose backend cannot tell is UNKNOWN. */
enum xp_device_health {
        XP_DEVICE_HEALTH_UNKNOWN,
        XP_DEVICE_HEALTHY,
        XP_DEVICE_UNHEALTHY,
};

struct xp_device_metrics {
        double utilization_percent;
        int64_t memory_used_bytes;
        double temperature_celsius;
        double power_watts;
        json_t *extra;
};

struct xp_device {
        char *id; /* stable: the vendor's UUID, else the PCI address */
        enum xp_device_kind kind;
        char *vendor;
        char *model;
        char *resource_name; /* e.g. nvidia.com/gpu */
        int64_t index;       /* the vendor's index (nvidia0 -> 0) */
        XP_LIST(char *, device_nodes);
        int64_t memory_bytes;
        int64_t compute_units;
        double fp16_tflops;
        double fp32_tflops;
        struct xp_opt_int64 numa_node;
        char *local_cpus; /* a cpulist, "0-23,48-71" */
        char *pci_address;
        char *pci_id;                   /* vendor:device, "10de:2330" */
        char *pci_link;                 /* "16GT/s x16" */
        char *compute_capability;       /* CUDA's "9.0", where the vendor has one */
        struct xp_opt_bool mig_enabled; /* NVIDIA Multi-Instance GPU mode, where supported */
        enum xp_device_health health;
        char *health_reason; /* why, when unhealthy ("Xid 79: GPU has fallen off the bus") */
        struct xp_device_metrics *metrics;
        bool simulated;
        json_t *extra;
};

struct xp_device_link {
        char *a; /* device ids */
        char *b;
        enum xp_link_level level;
        int64_t nvlinks;       /* number of direct links, level NVLINK */
        double bandwidth_gbps; /* per direction, when known */
        json_t *extra;
};

struct xp_numa_node {
        int64_t id;
        char *cpus; /* cpulist */
        int64_t memory_bytes;
        json_t *extra;
};

struct xp_cpu_topology {
        int64_t sockets;
        int64_t cores;
        int64_t threads;
        json_t *extra;
};

struct xp_node_inventory {
        struct xp_cpu_topology *cpu;
        int64_t memory_bytes; /* the node's total memory */
        XP_LIST(struct xp_numa_node, numa_nodes);
        XP_LIST(struct xp_device, devices);
        XP_LIST(struct xp_device_link, links);
        json_t *extra;
};

/* ---- node ---------------------------------------------------------------------------------- */

struct xp_node_spec {
        char *pod_cidr;
        char *provider_id;
        bool unschedulable;
        XP_LIST(struct xp_taint, taints);
        json_t *extra;
};

struct xp_node_address {
        char *type; /* InternalIP, Hostname, ... */
        char *address;
        json_t *extra;
};

struct xp_node_system_info {
        char *machine_id;
        char *system_uuid;
        char *boot_id;
        char *kernel_version;
        char *os_image;
        char *container_runtime_version;
        char *kubelet_version;
        char *kube_proxy_version;
        char *operating_system;
        char *architecture;
        json_t *extra;
};

struct xp_node_status {
        struct xp_resource_list capacity;
        struct xp_resource_list allocatable;
        XP_LIST(struct xp_condition, conditions);
        XP_LIST(struct xp_node_address, addresses);
        struct xp_node_system_info node_info;
        struct xp_node_inventory *xpool; /* NULL for nodes without an xpool agent */
        json_t *extra;
};

struct xp_node {
        struct xp_object_meta metadata;
        struct xp_node_spec spec;
        struct xp_node_status status;
        json_t *extra;
};

/* ---- namespace (v1, cluster-scoped) --------------------------------------------------------- */

enum xp_namespace_phase {
        XP_NAMESPACE_PHASE_UNSET,
        XP_NAMESPACE_ACTIVE,
        XP_NAMESPACE_TERMINATING,
};

struct xp_namespace_spec {
        XP_LIST(char *, finalizers); /* "kubernetes", or qualified names with a domain */
        json_t *extra;
};

struct xp_namespace_status {
        enum xp_namespace_phase phase;
        json_t *extra; /* conditions */
};

struct xp_namespace {
        struct xp_object_meta metadata;
        struct xp_namespace_spec spec;
        struct xp_namespace_status status;
        json_t *extra;
};

/* ---- event (core v1) ------------------------------------------------------------------------ */

/*
 * MicroTime (eventTime, a Lease's acquireTime and renewTime): microseconds since the epoch, 0
 * when absent; RFC 3339 with six fraction digits in JSON ("2026-12-02T19:20:31.123456Z").
 */

/* What an Event or a Lease refers to (core/v1 ObjectReference). */
struct xp_object_reference {
        char *kind;
        char *namespace;
        char *name;
        char *uid;
        char *api_version;
        char *resource_version;
        char *field_path; /* "spec.containers{trainer}" */
        json_t *extra;
};

enum xp_event_type {
        XP_EVENT_TYPE_UNSET,
        XP_EVENT_NORMAL,
        XP_EVENT_WARNING,
};

struct xp_event_source {
        char *component;
        char *host;
        json_t *extra;
};

struct xp_event_series {
        int64_t count;              /* int32 */
        int64_t last_observed_time; /* MicroTime */
        json_t *extra;              /* state (deprecated) */
};

struct xp_event {
        struct xp_object_meta metadata;
        struct xp_object_reference involved_object;
        char *reason;
        char *message;
        struct xp_event_source source;
        int64_t first_timestamp;
        int64_t last_timestamp;
        int64_t count; /* int32 */
        enum xp_event_type type;
        int64_t event_time;             /* MicroTime */
        struct xp_event_series *series; /* NULL when absent */
        char *action;
        struct xp_object_reference *related; /* NULL when absent */
        char *reporting_component;
        char *reporting_instance;
        json_t *extra;
};

/* ---- lease (coordination.k8s.io/v1) --------------------------------------------------------- */

struct xp_lease_spec {
        char *holder_identity;
        struct xp_opt_int64 lease_duration_seconds; /* int32, > 0 */
        int64_t acquire_time;                       /* MicroTime */
        int64_t renew_time;                         /* MicroTime */
        struct xp_opt_int64 lease_transitions;      /* int32, >= 0 */
        char *strategy;         /* "OldestEmulationVersion" or a qualified name with a domain */
        char *preferred_holder; /* only with a strategy */
        json_t *extra;
};

struct xp_lease {
        struct xp_object_meta metadata;
        struct xp_lease_spec spec;
        json_t *extra;
};

/* ---- lifecycle and enum names -------------------------------------------------------------- */

void xp_pod_free(struct xp_pod *pod);
void xp_node_free(struct xp_node *node);
void xp_node_inventory_free(struct xp_node_inventory *inventory);
XP_DEFINE_FREEP(struct xp_pod, xp_pod_free)
XP_DEFINE_FREEP(struct xp_node, xp_node_free)
XP_DEFINE_FREEP(struct xp_node_inventory, xp_node_inventory_free)
void xp_namespace_free(struct xp_namespace *ns);
void xp_event_free(struct xp_event *event);
void xp_lease_free(struct xp_lease *lease);
XP_DEFINE_FREEP(struct xp_namespace, xp_namespace_free)
XP_DEFINE_FREEP(struct xp_event, xp_event_free)
XP_DEFINE_FREEP(struct xp_lease, xp_lease_free)

/* Each returns the Kubernetes spelling, or NULL for UNSET/out of range. */
const char *xp_pod_phase_to_string(enum xp_pod_phase phase);
const char *xp_restart_policy_to_string(enum xp_restart_policy policy);
const char *xp_condition_status_to_string(enum xp_condition_status status);
const char *xp_taint_effect_to_string(enum xp_taint_effect effect);
const char *xp_device_kind_to_string(enum xp_device_kind kind);
const char *xp_link_level_to_string(enum xp_link_level level);
const char *xp_device_health_to_string(enum xp_device_health health);
const char *xp_namespace_phase_to_string(enum xp_namespace_phase phase);
const char *xp_event_type_to_string(enum xp_event_type type);

/* Each returns the value (> 0) or -EINVAL for a spelling it does not know. */
int xp_pod_phase_from_string(const char *s);
int xp_restart_policy_from_string(const char *s);
int xp_condition_status_from_string(const char *s);
int xp_taint_effect_from_string(const char *s);
int xp_device_kind_from_string(const char *s);
int xp_link_level_from_string(const char *s);
int xp_device_health_from_string(const char *s);
int xp_namespace_phase_from_string(const char *s);
int xp_event_type_from_string(const char *s);
