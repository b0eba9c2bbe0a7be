/**
 * The trust-roots ConfigMap as a contract between identity (which writes the weft- keys), the
 * injector (which mounts it into meshed pods) and the proxy (which watches the mount). Issue 21's
 * rotation contract fixes these names.
 */

/** The ConfigMap, in the control plane's namespace (Linkerd's name). */
export const TRUST_ROOTS_CONFIGMAP = "linkerd-identity-trust-roots";

/** Keys of the ConfigMap, which are also file names in the mounted directory. */
export const TrustRootsKeys = {
  /** The trust anchors, one or more PEM certificates (Linkerd's key). */
  anchors: "ca-bundle.crt",
  /** Every live issuer identity has loaded, PEM, current first. */
  issuers: "weft-issuers.crt",
  /** RFC 3339 UTC: a proxy whose leaf was issued before this renews soon. */
  renewBefore: "weft-renew-before",
} as const;

/** Where the injector mounts the ConfigMap in the proxy container, read-only. */
export const TRUST_ROOTS_MOUNT_PATH = "/var/run/weft/identity/trust-roots";

/** Set by the injector to the mount path; the proxy watches that directory when it is set. */
export const TRUST_ROOTS_DIR_ENV = "WEFT_PROXY_IDENTITY_TRUST_ROOTS_DIR";

/** The volume's name in the pod spec. */
export const TRUST_ROOTS_VOLUME = "weft-identity-trust-roots";

/**
 * A pod can only mount ConfigMaps of its own namespace, so the injector keeps a copy of the
 * trust-roots ConfigMap, under this name, in each namespace outside the control plane's where it
 * injected a proxy (control/injector/trust_roots_copy.ts). The label marks the copies.
 */
export const TRUST_ROOTS_COPY_CONFIGMAP = "weft-identity-trust-roots";
export const TRUST_ROOTS_COPY_LABEL = "weft.io/trust-roots-copy";

/** The trust-roots ConfigMap a pod of `namespace` mounts. */
export function trustRootsConfigMapFor(namespace: string | undefined, controlPlaneNamespace: string): string {
  return namespace === controlPlaneNamespace ? TRUST_ROOTS_CONFIGMAP : TRUST_ROOTS_COPY_CONFIGMAP;
}
