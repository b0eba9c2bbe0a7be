/** Loads the API server configuration: a kubeconfig file when given, else the in-cluster config. */
import { KubeConfig } from "@kubernetes/client-node";

export function loadKubeConfig(kubeconfigPath?: string): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromCluster();
  if (!kc.getCurrentCluster()) {
    throw new Error(
      kubeconfigPath
        ? `kubeconfig ${kubeconfigPath} has no current cluster`
        : "no in-cluster API server config",
    );
  }
  return kc;
}

/**
 * A kubeconfig given as text (YAML or JSON), e.g. from a multicluster credentials Secret; `what`
 * names its origin in errors. Throws when it does not parse or has no current cluster.
 */
export function kubeConfigFromText(text: string, what: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (e) {
    throw new Error(`${what}: kubeconfig does not parse: ${(e as Error).message}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`${what}: kubeconfig has no current cluster`);
  if (!cluster.server) throw new Error(`${what}: kubeconfig's cluster ${cluster.name} has no server`);
  return kc;
}
