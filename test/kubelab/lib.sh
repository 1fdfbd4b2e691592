# shellcheck shell=bash disable=SC2034  # the settings are used by the scripts that source this
# Shared by up, down and check (sourced, not run). The lab's fixed names,
# addresses and ports are stated here once; up writes them into
# STATE_DIR/env for the tests.
#
# Everything the lab listens on is bound to 127.0.0.1. The ports are not the
# Kubernetes defaults, so the lab does not meet an etcd or a kubelet that a
# Debian package started on the same machine.

# The Kubernetes release the lab builds, and the version of its staging
# modules (k8s.io/api and the rest) that go.mod pins.
KUBELAB_K8S_VERSION=v1.34.4

# The node's name. up maps it to 127.0.0.1 in /etc/hosts, and the apiserver
# reaches the kubelet by this name (--kubelet-preferred-address-types=Hostname),
# so attach and port-forward traffic stays on loopback.
KUBELAB_NODE=kubelab-node
KUBELAB_HOSTS_LINE="127.0.0.1 $KUBELAB_NODE # kubelab"

# The bridge that parents every Pod's macvlan interface. It has no ports, so
# a Pod's address reaches nothing: not the host, not another Pod (macvlan
# private mode), not the network. It carries the node's address (a /32 from
# the benchmarking range 198.18.0.0/15), which Pods have no route to: the
# kubelet refuses a loopback node address.
KUBELAB_BRIDGE=kubelab0
KUBELAB_NODE_IP=198.18.0.1
KUBELAB_POD_SUBNET=198.18.4.0/22
KUBELAB_SERVICE_SUBNET=10.96.0.0/16
KUBELAB_SERVICE_IP=10.96.0.1

KUBELAB_APISERVER_PORT=6443
KUBELAB_ETCD_PORT=32379
KUBELAB_ETCD_PEER_PORT=32380
KUBELAB_KUBELET_PORT=20250
KUBELAB_KUBELET_HEALTHZ_PORT=20248
KUBELAB_CONTROLLER_MANAGER_PORT=20257
KUBELAB_SCHEDULER_PORT=20259

# The pod-sandbox image, built from cmd/kubelab-pause (its tag is the
# binary's hash, so a changed program makes a new image).
KUBELAB_PAUSE_REPO=localhost/kubelab-pause

# say prints a progress line on stderr (stdout carries only the kubeconfig
# path).
say() {
  printf 'kubelab: %s\n' "$*" >&2
}

# die prints its message and exits non-zero.
die() {
  say "error: $*"
  exit 1
}

# state_dir_of makes STATE_DIR absolute and refuses an empty or root path.
state_dir_of() {
  [ -n "${1:-}" ] || die "usage: $(basename "$0") STATE_DIR"
  local dir
  dir=$(realpath -m -- "$1")
  [ "$dir" != / ] || die "STATE_DIR must not be /"
  case $dir in *[[:space:]]*) die "STATE_DIR must not contain white space: $dir" ;; esac
  printf '%s\n' "$dir"
}

# KUBELAB_MARKER is the file up writes first into a state directory; down
# touches no directory without it, so a mistyped path is never removed.
KUBELAB_MARKER=.kubelab-state

# pid_of prints the recorded pid of component $2 in state dir $1, if any.
pid_of() {
  local file=$1/pids/$2.pid
  [ -f "$file" ] && cat "$file"
  return 0
}

# alive says whether pid $1 is a running (not zombie) process.
alive() {
  [ -n "$1" ] && [ -e "/proc/$1" ] && ! grep -qs '^State:.*Z' "/proc/$1/status"
}

# ctr_of runs ctr against the lab's containerd in state dir $1.
ctr_of() {
  local state=$1
  shift
  ctr --address "$state/containerd/containerd.sock" --namespace k8s.io "$@"
}

# import_image copies the Podman image $2 into the containerd of the lab in
# state dir $1 (namespace k8s.io) through an OCI archive, logging to
# STATE_DIR/logs/images.log; it fails unless containerd then lists the image.
import_image() {
  local state=$1 image=$2 archive
  # A name without a tag is :latest, as Podman and the kubelet read it.
  case ${image##*/} in *:*) ;; *) image=$image:latest ;; esac
  archive=$state/images/$(printf '%s' "$image" | tr -c 'A-Za-z0-9._-' _).tar
  mkdir -p "$state/images"
  say "importing $image"
  if ! podman save --format oci-archive -o "$archive" "$image" >>"$state/logs/images.log" 2>&1; then
    say "podman save $image failed: is it a local Podman image (podman image exists $image)?"
    return 1
  fi
  if ! ctr_of "$state" images import --base-name "${image%:*}" "$archive" >>"$state/logs/images.log" 2>&1; then
    rm -f "$archive"
    say "ctr images import of $image failed (see $state/logs/images.log)"
    return 1
  fi
  rm -f "$archive"
  # Listed first, then searched: grep -q in a pipe would end ctr early, and
  # pipefail would count that as a failure.
  local listed
  listed=$(ctr_of "$state" images ls -q)
  grep -qxF "$image" <<<"$listed" || {
    say "$image is not in containerd after its import"
    return 1
  }
}
