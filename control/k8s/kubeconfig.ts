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
