/**
 * `nodenet lab up --backend bgp` as a user runs it (root): the real CLI from dist/ (npm run build first). Two
 * nodes with n1 a route reflector (--bgp-route-reflectors n1); `lab status` shows each node's backend and every
 * BGP session's state (from each agent's /overlay/status, which reads BIRD's socket); `lab add-node` adds n3,
 * configured as the others (a client of n1: its block reaches n2 through the reflector, next hop kept); `lab
 * down` leaves no BIRD of the lab (`pgrep -a bird`) and no namespace. The lab's name is unique to this run, so a
 * user's lab is never touched; teardown downs it, also when a case fails.
 */
import t from 'tap';
import { REPO } from '../agent/src/lab/lab.js';
import { labRoot } from '../agent/src/lab/plan.js';
import { runner, shOk } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';

const NAME = `g${process.pid.toString(36)}`;
const nodenet = (...args: string[]) => runner.run([process.execPath, `${REPO}bin/nodenet.js`, ...args], { allowFailure: true, timeoutMs: 240_000 });
const birds = async () => (await shOk(['pgrep', '-a', 'bird'])).stdout.split('\n').filter((l) => l.includes(`${labRoot()}/${NAME}/`));
const namespaces = async () => (await shOk(['ip', 'netns', 'list'])).stdout.split('\n').map((l) => l.split(' ')[0] ?? '').filter((n) => n.startsWith(`nn-${NAME}-`));
const birdRoutes = async (node: string) => (await shOk(['ip', '-n', `nn-${NAME}-${node}`, 'route', 'show', 'proto', 'bird'])).stdout.trim().split('\n').filter(Boolean);
/** `lab status`'s overlay rows: "NODE BACKEND PEER PEER-IP STATE", one string each. */
function overlayRows(out: string): string[] {
  const at = out.indexOf('\noverlay (');
  if (at < 0) return [];
  return out.slice(at).split('\n').slice(3).filter((l) => /^n\d/.test(l)).map((l) => l.split(/\s{2,}/).slice(0, 5).join(' '));
}

t.teardown(async () => { await nodenet('lab', 'down', '--name', NAME); });

t.test('lab up --backend bgp --bgp-route-reflectors n1, status, add-node, down', async (t) => {
  t.same(await birds(), [], 'before: no BIRD of this lab');
  const up = await nodenet('lab', 'up', '--name', NAME, '--nodes', '2', '--backend', 'bgp', '--bgp-route-reflectors', 'n1');
  t.equal(up.exitCode, 0, `up: ${up.stderr}`);
  t.match(up.stdout, /overlay bgp \(route reflectors n1\)/);
  t.equal((await birds()).length, 2, 'a BIRD per node');
  let st = '';
  await waitFor(async () => {
    st = (await nodenet('lab', 'status', '--name', NAME)).stdout;
    return overlayRows(st).filter((r) => r.endsWith('Established')).length === 2;
  }, 'both sessions Established in lab status', { timeoutMs: 30_000, intervalMs: 300 });
  t.same(overlayRows(st), ['n1 bgp n2 192.168.77.12 Established', 'n2 bgp n1 192.168.77.11 Established'], `lab status shows the peers:\n${st}`);
  t.match(st, /overlay bgp \(route reflectors n1\)/);

  const add = await nodenet('lab', 'add-node', '--name', NAME);
  t.equal(add.exitCode, 0, `add-node: ${add.stderr}`);
  t.match(add.stdout, /node n3 joined/);
  await waitFor(async () => {
    st = (await nodenet('lab', 'status', '--name', NAME)).stdout;
    return overlayRows(st).filter((r) => r.endsWith('Established')).length === 4;
  }, 'n3\'s session Established', { timeoutMs: 30_000, intervalMs: 300 });
  t.same(overlayRows(st), ['n1 bgp n2 192.168.77.12 Established', 'n1 bgp n3 192.168.77.13 Established', 'n2 bgp n1 192.168.77.11 Established', 'n3 bgp n1 192.168.77.11 Established'], 'the reflector peers with both, the clients with it only');
  await waitFor(async () => (await birdRoutes('n2')).some((l) => / via 192\.168\.77\.13 dev eth0/.test(l)), 'n2 routes n3\'s block via n3\'s IP (reflected by n1)', { timeoutMs: 20_000, intervalMs: 100 });
  t.equal((await birdRoutes('n3')).length, 2, 'n3 routes n1\'s and n2\'s blocks');

  const down = await nodenet('lab', 'down', '--name', NAME);
  t.equal(down.exitCode, 0, `down: ${down.stderr}`);
  t.same(await birds(), [], 'after down: no BIRD of this lab');
  t.same(await namespaces(), [], 'after down: no namespace of this lab');
});
