// Kubernetes nodes as the scheduler's nodes.
//
// A Kubernetes Node object says what a machine offers: `status.allocatable` (what pods may
// request: "cpu", "memory", and the NVIDIA device plugin's extended resources), its labels
// (GPU feature discovery's `nvidia.com/gpu.product`, `.memory`, `.count`, `.replicas`,
// `.sharing-strategy`; `topology.kubernetes.io/zone`), `spec.taints`, `spec.unschedulable`
// (cordoned) and the Ready condition. NodeFromKube turns one into a NodeSpec, or says why the
// node is not offered (not Ready, no allocatable CPU), so that a node going NotReady leaves the
// scheduler's inventory and its tasks are requeued.
//
// GPUs, by the device plugin's strategies (backends-reference.md section 2):
//   - whole GPUs: `nvidia.com/gpu: N` -> N exclusive GPUs;
//   - time-slicing or MPS (`nvidia.com/gpu.replicas` R > 1, `nvidia.com/gpu.sharing-strategy`
//     "time-slicing" or "mps"): `nvidia.com/gpu` (or `nvidia.com/gpu.shared` when renamed) counts
//     GPUs x R, so the node has count/R GPUs shared R ways;
//   - MIG, strategy "mixed": `nvidia.com/mig-<profile>: n` per profile. Kubernetes does not say
//     which GPU holds which instance, so the instances are packed onto GPUs largest first at
//     NVIDIA's placements (tessera/gpu/mig_profiles.h), and the node has as many MIG GPUs as
//     that takes (a GPU whose instances are all in use by others still counts). The layout is the
//     operator's (mig-parted), so mig_managed is false: Tessera never re-partitions a Kubernetes
//     node's GPUs.
//   Which device of the node a pod gets is the device plugin's choice, not the scheduler's: the
//   scheduler's per-GPU positions on a Kubernetes node are bookkeeping (docs/kubernetes.md).
//
// Every label is kept (job node selectors match them); the zone comes from
// `topology.kubernetes.io/zone`, and "rack" from the label named by `rack_label`, if any.
//
// Pure functions of their input; safe from any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tessera/v1/node.pb.h"

namespace tessera::kubernetes {

struct NodeTranslation {
  // The node label copied to the scheduler's "rack" label (its locality domain); empty: none.
  std::string rack_label;
  // GPU memory (MiB) when the node has no `nvidia.com/gpu.memory` label and the model name has
  // no "-<n>GB" suffix ("A100-80GB" has 81920).
  int64_t default_gpu_memory_mib = 16384;
};

struct KubeNode {
  // Empty when the node is offered to the scheduler; otherwise why not ("not Ready: <reason>").
  std::string excluded;
  v1::NodeSpec spec;  // set when not excluded.
};

// The scheduler's view of a Node object. A malformed node (no name, a quantity that does not
// parse) is excluded, saying which field.
KubeNode NodeFromKube(const nlohmann::json& node, const NodeTranslation& translation);

// The scheduler's model name for a `nvidia.com/gpu.product` label ("NVIDIA-A100-SXM4-80GB" ->
// "A100-80GB", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb" -> "H100-80GB", "Tesla-T4" -> "Tesla-T4").
std::string ModelFromProductLabel(const std::string& product, int64_t memory_mib);

}  // namespace tessera::kubernetes
