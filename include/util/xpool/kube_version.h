/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes release whose API xpool speaks: the server's /version and OpenAPI info, and the
 * node agent's kubeletVersion, which tools compare with the server's as they compare a kubelet's.
 */
#pragma once

#define KUBE_MAJOR "1"
#define KUBE_MINOR "32"
/* The server's gitVersion and the agent's kubeletVersion: Kubernetes' release, then xpool's. */
#define XP_KUBE_GIT_VERSION "v" KUBE_MAJOR "." KUBE_MINOR ".0-xpool." XPOOL_VERSION
