import t from 'tap';
import { parseProtocols, peerSessions } from './protocols.js';

// Captured from Debian's bird2 2.0.12 running config.ts's file (timeformat protocol iso long), trailing spaces kept.
const CAPTURED = [
  'BIRD 2.0.12 ready.',
  'Name       Proto      Table      State  Since         Info',
  'device1    Device     ---        up     2026-12-05 21:06:51  ',
  'nodenet_kernel Kernel     master4    up     2026-12-05 21:06:51  ',
  'nodenet_block Static     master4    up     2026-12-05 21:06:51  ',
  'peer_192_168_99_2 BGP        ---        start  2026-12-05 21:06:56  Passive       Socket: Connection closed',
  'peer_192_168_99_3 BGP        ---        start  2026-12-05 21:06:51  Passive       ',
  'peer_192_168_99_4 BGP        ---        up     2026-12-05 21:06:52  Established   ',
  'peer_192_168_99_5 BGP        ---        down   2026-12-05 21:06:57  ',
  '',
].join('\n');

t.test('show protocols: every row, the banner and the header skipped', async (t) => {
  const rows = parseProtocols(CAPTURED);
  t.same(rows.map((r) => [r.name, r.proto, r.table, r.state]), [
    ['device1', 'Device', '---', 'up'],
    ['nodenet_kernel', 'Kernel', 'master4', 'up'],
    ['nodenet_block', 'Static', 'master4', 'up'],
    ['peer_192_168_99_2', 'BGP', '---', 'start'],
    ['peer_192_168_99_3', 'BGP', '---', 'start'],
    ['peer_192_168_99_4', 'BGP', '---', 'up'],
    ['peer_192_168_99_5', 'BGP', '---', 'down'],
  ]);
  t.equal(rows[3]!.since, '2026-12-05 21:06:56');
  t.equal(rows[3]!.info, 'Passive       Socket: Connection closed');
  t.equal(rows[0]!.info, '');
});

t.test('the sessions: state, established, the last error, the peer IP from the name', async (t) => {
  t.same(peerSessions(parseProtocols(CAPTURED)), [
    { protocol: 'peer_192_168_99_2', peerIP: '192.168.99.2', state: 'Passive', established: false, since: '2026-12-05 21:06:56', detail: 'Socket: Connection closed' },
    { protocol: 'peer_192_168_99_3', peerIP: '192.168.99.3', state: 'Passive', established: false, since: '2026-12-05 21:06:51', detail: '' },
    { protocol: 'peer_192_168_99_4', peerIP: '192.168.99.4', state: 'Established', established: true, since: '2026-12-05 21:06:52', detail: '' },
    { protocol: 'peer_192_168_99_5', peerIP: '192.168.99.5', state: 'Down', established: false, since: '2026-12-05 21:06:57', detail: '' },
  ]);
});

t.test("BIRD's default time format (one word) reads too", async (t) => {
  const rows = parseProtocols('peer_192_168_99_2 BGP        ---        start  21:04:55.405  Active        Socket: Connection refused\n');
  t.same(peerSessions(rows), [{ protocol: 'peer_192_168_99_2', peerIP: '192.168.99.2', state: 'Active', established: false, since: '21:04:55.405', detail: 'Socket: Connection refused' }]);
});

t.test('a line that is no row is an error, not a silent skip', async (t) => {
  t.throws(() => parseProtocols('BIRD 2.0.12 ready.\nUnable to connect\n'), /cannot read "Unable to connect"/);
});
