/**
 * Leader election against a real API server (KUBECONFIG): three electors on one Lease in a
 * namespace of the test's own, with client-go's default timings. Exactly one leads once settled and
 * never more than one; the leader aborting (release) hands over on the next attempt; a leader cut
 * off from the API (as a crash: no renewals, no release) is replaced within leaseDuration +
 * retryPeriod, and steps down itself by its renew deadline, before anyone else leads.
 */
import assert from "node:assert/strict";
import { CoreV1Api } from "@kubernetes/client-node";
import { systemClock } from "../../proto/support/clock.ts";
import { loadKubeConfig } from "./kubeconfig.ts";
import { LeaderElector, type Lease, type LeaseApi } from "./leader_election.ts";
import { KubeLeaseApi } from "./lease_client.ts";

const kubeconfig = Deno.env.get("KUBECONFIG");

/** The real client, with a switch that cuts it off (calls never answer) as if its pod were gone. */
class CuttableApi implements LeaseApi {
  cut = false;
  constructor(readonly inner: LeaseApi) {}
  #gate<T>(f: () => Promise<T>): Promise<T> {
    return this.cut ? new Promise<T>(() => {}) : f();
  }
  get(s: AbortSignal) {
    return this.#gate(() => this.inner.get(s));
  }
  create(l: Lease, s: AbortSignal) {
    return this.#gate(() => this.inner.create(l, s));
  }
  update(l: Lease, s: AbortSignal) {
    return this.#gate(() => this.inner.update(l, s));
  }
}

Deno.test({
  name: "leader election on a real API server: one leader, release hand-over, takeover after a crash",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kc = loadKubeConfig(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const ns = `weft-k8s-lease-${crypto.randomUUID().slice(0, 8)}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const lease = "weft-test-leader";
    const candidates = ["pod-a", "pod-b", "pod-c"].map((identity) => {
      const api = new CuttableApi(new KubeLeaseApi(kc, ns, lease));
      const ctl = new AbortController();
      const e = new LeaderElector({ api, clock: systemClock, lease, namespace: ns, identity });
      return { identity, api, ctl, e, done: e.start(ctl.signal) };
    });
    let maxLeaders = 0;
    const sampler = setInterval(() => {
      maxLeaders = Math.max(maxLeaders, candidates.filter((c) => c.e.isLeader()).length);
    }, 20);
    const leaders = () => candidates.filter((c) => c.e.isLeader());
    const waitLeader = async (exclude: string, timeoutMs: number) => {
      const start = Date.now();
      while (Date.now() - start < timeoutMs) {
        const l = leaders().find((c) => c.identity !== exclude);
        if (l) return { leader: l, ms: Date.now() - start };
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error(`no leader other than ${exclude} within ${timeoutMs}ms`);
    };
    try {
      const first = await waitLeader("", 5_000);
      console.log(`first leader ${first.leader.identity} after ${first.ms}ms`);
      await new Promise((r) => setTimeout(r, 5_000));
      assert.equal(leaders().length, 1);
      const l1 = first.leader;
      const rec = await new KubeLeaseApi(kc, ns, lease).get(AbortSignal.timeout(5_000));
      assert.equal(rec?.spec?.holderIdentity, l1.identity);
      assert.equal(rec?.spec?.leaseDurationSeconds, 15);
      assert.match(rec?.spec?.renewTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

      // 1. The leader shuts down: it releases, a follower leads on its next attempt.
      l1.ctl.abort();
      await l1.done;
      const second = await waitLeader(l1.identity, 15_000);
      console.log(`after release: ${second.leader.identity} leads ${second.ms}ms after the release`);
      assert.ok(second.ms <= 2_000 * 1.2 + 1_000, `hand-over after release took ${second.ms}ms`);

      // 2. The new leader is cut off (a crash: no renewals, no release).
      const l2 = second.leader;
      l2.api.cut = true;
      const cutAt = Date.now();
      const third = await waitLeader(l2.identity, 25_000);
      const lostAfter = Date.now() - cutAt;
      console.log(`after a crash: ${third.leader.identity} leads ${third.ms}ms after the crash`);
      assert.equal(l2.e.isLeader(), false, "the cut-off leader stepped down (renew deadline)");
      assert.ok(third.ms >= 10_000, `took over too early: ${third.ms}ms`);
      assert.ok(third.ms <= 15_000 + 2_000 * 1.2 + 1_000, `takeover took ${third.ms}ms (${lostAfter})`);
      const after = await new KubeLeaseApi(kc, ns, lease).get(AbortSignal.timeout(5_000));
      assert.equal(after?.spec?.holderIdentity, third.leader.identity);
      assert.equal(after?.spec?.leaseTransitions, 2);
      assert.equal(maxLeaders, 1, "never two leaders at once");
    } finally {
      clearInterval(sampler);
      for (const c of candidates) c.ctl.abort();
      await Promise.all(candidates.filter((c) => !c.api.cut).map((c) => c.done));
      await core.deleteNamespace({ name: ns });
    }
  },
});
