import t from 'tap';
import type { Runner } from '../exec/runner.js';
import { formatTable } from '../cli/table.js';
import { OVERLAY_HEADERS, overlayRows, readNodeOverlay } from './overlay-status.js';

const session = (node: string | null, ip: string, state: string, detail = '') => ({ node, peerIP: ip, protocol: `peer_${ip.replace(/\./g, '_')}`, state, established: state === 'Established', since: '2026-12-05 21:04:49', detail });

t.test('overlayRows: a row per node and peer; bgp\'s session states, host-gw\'s peers not routed, a node that did not answer', async (t) => {
  const rows = overlayRows([
    { node: 'n1', status: { backend: 'bgp', peers: ['n2', 'n3'], unreachable: [], bgp: { sessions: [session('n2', '192.168.77.12', 'Established'), session('n3', '192.168.77.13', 'Active', 'Socket: Connection refused')] } }, error: null },
    { node: 'n2', status: { backend: 'bgp', peers: ['n1'], unreachable: [], bgp: { error: 'birdc show protocols: Unable to connect to server control socket' } }, error: null },
    { node: 'n3', status: { backend: 'bgp', peers: [], unreachable: [], bgp: { sessions: [] } }, error: null },
    { node: 'n4', status: { backend: 'host-gw', peers: ['n5', 'far'], unreachable: [{ node: 'far', publicIP: '10.1.2.3', reason: 'this node reaches 10.1.2.3 through a gateway' }] }, error: null },
    { node: 'n5', status: { backend: 'vxlan', peers: [], unreachable: [] }, error: null },
    { node: 'n6', status: null, error: 'http://127.0.0.1:10249/overlay/status: connect ECONNREFUSED 127.0.0.1:10249' },
  ]);
  t.equal(`${formatTable([...OVERLAY_HEADERS], rows).trimEnd()}\n`, `NODE   BACKEND   PEER   PEER IP         STATE         SINCE                 INFO
n1     bgp       n2     192.168.77.12   Established   2026-12-05 21:04:49   -
n1     bgp       n3     192.168.77.13   Active        2026-12-05 21:04:49   Socket: Connection refused
n2     bgp       -      -               unknown       -                     BIRD did not answer: birdc show protocols: Unable to connect to server control socket
n3     bgp       -      -               no sessions   -                     no peers
n4     host-gw   n5     -               routed        -                     -
n4     host-gw   far    10.1.2.3        not routed    -                     this node reaches 10.1.2.3 through a gateway
n5     vxlan     -      -               no peers      -                     -
n6     -         -      -               unknown       -                     http://127.0.0.1:10249/overlay/status: connect ECONNREFUSED 127.0.0.1:10249
`);
  t.same(overlayRows([{ node: 'n1', status: { backend: 'bgp', peers: [], unreachable: [], bgp: { sessions: [session(null, '192.168.77.99', 'Connect')] } }, error: null }])[0], ['n1', 'bgp', '?', '192.168.77.99', 'Connect', '2026-12-05 21:04:49', '-'], 'a session to no known Node');
});

t.test('readNodeOverlay: asks in the node\'s namespace, reads the answer; an agent that does not answer or says nonsense is an error, not a throw', async (t) => {
  const calls: { argv: readonly string[]; netns?: string }[] = [];
  const answer = { exitCode: 0, stdout: JSON.stringify({ backend: 'vxlan', peers: ['n2'], unreachable: [] }), stderr: '' };
  const runner = (r: { exitCode: number; stdout: string; stderr: string }): Runner => ({ run: async (argv, opts) => { calls.push({ argv, ...(opts?.netns ? { netns: opts.netns } : {}) }); return r; } });
  const ok = await readNodeOverlay(runner(answer), 'n1', '/var/run/netns/nn-x-n1');
  t.same(ok, { node: 'n1', status: { backend: 'vxlan', peers: ['n2'], unreachable: [] }, error: null });
  t.equal(calls[0]!.netns, '/var/run/netns/nn-x-n1');
  t.match(calls[0]!.argv.join(' '), /http:\/\/127\.0\.0\.1:10249\/overlay\/status/);
  t.match(await readNodeOverlay(runner({ exitCode: 2, stdout: '', stderr: 'connect ECONNREFUSED 127.0.0.1:10249' }), 'n1', '/x'), { status: null, error: /ECONNREFUSED/ });
  t.match(await readNodeOverlay(runner({ exitCode: 0, stdout: '{"peers":[]}', stderr: '' }), 'n1', '/x'), { status: null, error: /backend/ });
});
