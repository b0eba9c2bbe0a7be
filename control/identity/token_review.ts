/**
 * The seam to the Kubernetes TokenReview API: the service depends on `TokenReviewer`, the real
 * implementation posts `authentication.k8s.io/v1 TokenReview`s with @kubernetes/client-node.
 */
import { AuthenticationV1Api, type KubeConfig } from "@kubernetes/client-node";

export interface TokenReviewResult {
  authenticated: boolean;
  /** `system:serviceaccount:<ns>:<sa>` for ServiceAccount tokens. */
  username?: string;
  /** The audiences the token is valid for among those asked for. */
  audiences?: string[];
  /** The API server's reason when the token was not authenticated. */
  error?: string;
}

export interface TokenReviewer {
  /** Rejects only when the API could not be asked (network, authorization, 5xx). */
  review(token: string, audiences: string[]): Promise<TokenReviewResult>;
}

export class KubeTokenReviewer implements TokenReviewer {
  readonly #api: AuthenticationV1Api;

  constructor(kc: KubeConfig) {
    this.#api = kc.makeApiClient(AuthenticationV1Api);
  }

  async review(token: string, audiences: string[]): Promise<TokenReviewResult> {
    const res = await this.#api.createTokenReview({
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences } },
    });
    const s = res.status ?? {};
    return {
      authenticated: s.authenticated === true,
      username: s.user?.username,
      audiences: s.audiences,
      error: s.error || undefined,
    };
  }
}
