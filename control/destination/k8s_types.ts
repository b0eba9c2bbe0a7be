/** The fields of Kubernetes objects the destination service reads. */
import type { KubeObject } from "../k8s/mod.ts";

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: string;
}

export type Service = KubeObject & {
  spec?: {
    type?: string;
    clusterIP?: string;
    clusterIPs?: string[];
    externalName?: string;
    ports?: ServicePort[];
    internalTrafficPolicy?: string;
    /** Matched against ExternalWorkload labels (pods come through EndpointSlices). */
    selector?: Record<string, string> | null;
  };
};

export interface SliceEndpoint {
  addresses: string[];
  conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
  hostname?: string;
  nodeName?: string;
  zone?: string;
  hints?: { forZones?: { name: string }[] };
  targetRef?: { kind?: string; name?: string; namespace?: string };
}

export type EndpointSlice = KubeObject & {
  addressType?: string;
  endpoints?: SliceEndpoint[] | null;
  ports?: { name?: string | null; port?: number | null; protocol?: string }[] | null;
};

export interface ContainerPort {
  name?: string;
  containerPort: number;
}

export interface Container {
  name: string;
  ports?: ContainerPort[];
  restartPolicy?: string;
  env?: { name: string; value?: string }[];
}

export type Pod = KubeObject & {
  spec?: {
    serviceAccountName?: string;
    nodeName?: string;
    hostNetwork?: boolean;
    hostname?: string;
    containers?: Container[];
    initContainers?: Container[];
  };
  status?: { phase?: string; podIP?: string; podIPs?: { ip: string }[] };
};

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** policy.linkerd.io Server: only what decides opaque handling. */
export type Server = KubeObject & {
  spec?: {
    podSelector?: LabelSelector;
    externalWorkloadSelector?: LabelSelector;
    port?: number | string;
    proxyProtocol?: string;
  };
};

export interface SpRequestMatch {
  all?: SpRequestMatch[];
  any?: SpRequestMatch[];
  not?: SpRequestMatch;
  pathRegex?: string;
  method?: string;
}

export interface SpResponseMatch {
  all?: SpResponseMatch[];
  any?: SpResponseMatch[];
  not?: SpResponseMatch;
  status?: { min?: number; max?: number };
}

export type ServiceProfile = KubeObject & {
  spec?: {
    routes?: {
      name: string;
      condition?: SpRequestMatch;
      responseClasses?: { condition?: SpResponseMatch; isFailure?: boolean }[];
      isRetryable?: boolean;
      timeout?: string;
    }[];
    retryBudget?: { retryRatio?: number; minRetriesPerSecond?: number; ttl?: string };
    dstOverrides?: { authority: string; weight: number | string }[];
    opaquePorts?: (number | string)[];
  };
};
