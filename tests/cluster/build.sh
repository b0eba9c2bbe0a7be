#!/usr/bin/env bash
# Builds the cluster's Go binaries into a cache outside the repository, keyed by version, so only the
# first run on a machine pays for the (slow, 2-core) compile. Usage: build.sh [versions|k8s|etcd|coredns|crictl|all]
# Prints one "built <dir>" or "cached <dir>" line per component; build output goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${WEFT_CLUSTER_CACHE:-/var/cache/weft/cluster}"
export PATH="$PATH:/usr/local/go/bin"
# -mod=mod lets the wrapper modules resolve from go.sum without a vendor tree; GOPROXY is left as configured.
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0

# modver DIR MODULE: the version the wrapper module pins (a `tool` dependency is listed as indirect).
modver() { awk -v m="$2" '$1 == m { print $2; exit }' "$HERE/go/$1/go.mod"; }
K8S_VERSION="$(modver k8s k8s.io/kubernetes)"
ETCD_VERSION="$(modver etcd go.etcd.io/etcd/server/v3)"
COREDNS_VERSION="$(modver coredns github.com/coredns/coredns)"
CRICTL_VERSION="$(modver crictl sigs.k8s.io/cri-tools)"

# build NAME VERSION MODULE_DIR LDFLAGS PKG...: compiles into a temp dir and renames it into place, so an
# interrupted build never leaves a half-filled cache entry behind.
build() {
  local name="$1" version="$2" dir="$3" ldflags="$4"
  shift 4
  local out="$CACHE/$name-$version"
  if [[ -f "$out/.complete" ]]; then
    echo "cached $out"
    return
  fi
  mkdir -p "$CACHE"
  local tmp="$out.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  local start=$SECONDS
  echo "building $name $version ($*) ..." >&2
  local verbose=()
  [[ -n "${WEFT_BUILD_VERBOSE:-}" ]] && verbose=(-v)
  (cd "$dir" && go build "${verbose[@]}" -trimpath -ldflags "-s -w $ldflags" -o "$tmp/" "$@")
  touch "$tmp/.complete"
  rm -rf "$out" && mv "$tmp" "$out"
  echo "built $name $version in $((SECONDS - start))s" >&2
  echo "built $out"
}

build_k8s() {
  local minor="${K8S_VERSION#v1.}"
  minor="${minor%%.*}"
  local v="k8s.io/component-base/version"
  build k8s "$K8S_VERSION" "$HERE/go/k8s" \
    "-X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy \
    k8s.io/kubernetes/cmd/kubectl
}

build_etcd() {
  # The server module's root package is `main`; go build names that binary "server".
  build etcd "$ETCD_VERSION" "$HERE/go/etcd" "" go.etcd.io/etcd/server/v3
  local d="$CACHE/etcd-$ETCD_VERSION"
  if [[ -f "$d/server" ]]; then mv "$d/server" "$d/etcd"; fi
}

build_coredns() {
  build coredns "$COREDNS_VERSION" "$HERE/go/coredns" "" github.com/coredns/coredns
}

build_crictl() {
  # crictl lets cluster:down stop and remove pod sandboxes through the CRI, which also runs the CNI teardown.
  build crictl "$CRICTL_VERSION" "$HERE/go/crictl" "" sigs.k8s.io/cri-tools/cmd/crictl
}

case "${1:-all}" in
  versions) echo "k8s=$K8S_VERSION etcd=$ETCD_VERSION coredns=$COREDNS_VERSION crictl=$CRICTL_VERSION cache=$CACHE" ;;
  k8s) build_k8s ;;
  etcd) build_etcd ;;
  coredns) build_coredns ;;
  crictl) build_crictl ;;
  all) build_k8s && build_etcd && build_coredns && build_crictl ;;
  *) echo "usage: $0 [versions|k8s|etcd|coredns|crictl|all]" >&2 && exit 2 ;;
esac
