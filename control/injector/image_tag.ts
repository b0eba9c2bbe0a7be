/**
 * The tag of an image reference (`reg:5000/weft:1.2` → `1.2`); undefined for a digest-only or bare name. The
 * injector records it as the proxy's version (`linkerd.io/proxy-version`) unless `--proxy-version=` says
 * otherwise, and `check` compares versions by it, so a control plane rolled onto another tag shows which
 * proxies still run the old one.
 */
export function imageTag(image: string | undefined): string | undefined {
  if (!image) return undefined;
  const name = image.split("@")[0];
  const slash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  return colon > slash ? name.slice(colon + 1) : undefined;
}
