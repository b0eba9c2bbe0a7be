import assert from "node:assert/strict";
import { netnsDirProblem, netnsDirState, parseMountinfo } from "./netns_dir.ts";

const ROOT = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw";
const nsMount = (id: number, parent: number, name: string) =>
  `${id} ${parent} 0:4 net:[40265] /run/netns/${name} rw shared:${id} - nsfs nsfs rw`;

Deno.test("netns dir: prepared before the runtime (as up leaves it) has nothing hidden", () => {
  const s = netnsDirState(parseMountinfo([
    ROOT,
    "45 27 254:0 /run/netns /run/netns rw,relatime shared:2 - ext4 /dev/vda rw",
    nsMount(124, 45, "cni-a"),
    nsMount(404, 45, "weft-1-hub"),
  ].join("\n")));
  assert.deepEqual(s, {
    mountPoint: true,
    shared: true,
    visible: ["/run/netns/cni-a", "/run/netns/weft-1-hub"],
    hidden: [],
    exposed: [],
  });
  assert.equal(netnsDirProblem(s), undefined);
});

Deno.test("netns dir: `ip netns add` after the runtime's mounts hides them (issue 16)", () => {
  // containerd mounted cni-a on the plain directory (parent: /), then ip netns bound /run/netns over itself
  // recursively, which copied cni-a into the new mount.
  const s = netnsDirState(parseMountinfo([
    ROOT,
    nsMount(124, 27, "cni-a"),
    "150 27 254:0 /run/netns /run/netns rw,relatime shared:3 - ext4 /dev/vda rw",
    nsMount(151, 150, "cni-a"),
    nsMount(152, 150, "x"),
  ].join("\n")));
  assert.deepEqual(s.hidden, ["/run/netns/cni-a"]);
  assert.deepEqual(s.visible, ["/run/netns/cni-a", "/run/netns/x"]);
  assert.match(netnsDirProblem(s)!, /1 namespace mount\(s\) hidden .*cannot finish terminating/);
});

Deno.test("netns dir: not a mount point but holding the runtime's mounts is reported before the bug hits", () => {
  const s = netnsDirState(parseMountinfo([ROOT, nsMount(124, 27, "cni-a")].join("\n")));
  assert.equal(s.mountPoint, false);
  assert.deepEqual(s.exposed, ["/run/netns/cni-a"]);
  assert.match(netnsDirProblem(s)!, /is not a mount point but holds 1/);
  const empty = netnsDirState(parseMountinfo(ROOT));
  assert.match(netnsDirProblem(empty)!, /not a shared mount point/);
});

Deno.test("netns dir: mountinfo octal escapes in mount points are decoded", () => {
  const m = parseMountinfo("60 27 0:4 net:[1] /run/netns/a\\040b rw shared:9 - nsfs nsfs rw");
  assert.equal(m[0].mountPoint, "/run/netns/a b");
  assert.deepEqual(m[0].optional, ["shared:9"]);
});
