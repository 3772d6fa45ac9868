import t from 'tap';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { FakeRunner } from '../../exec/runner.fake.js';
import { parseIPv4 } from '../../../../lib/net/ip.js';
import { ConntrackExecutor, conntrackDeleteArgv, parseDeletedCount } from './conntrack.js';
import { FakeConntrack } from './conntrack.fake.js';

const ip = parseIPv4;

t.test('argv for each deletion', async (t) => {
  t.same(conntrackDeleteArgv({ kind: 'serviceIP', ip: ip('10.96.0.10'), port: 53 }, ip('10.244.1.5')), [
    'conntrack', '-D', '-p', 'udp', '--orig-dst', '10.96.0.10', '--orig-port-dst', '53', '--reply-src', '10.244.1.5',
  ]);
  t.same(conntrackDeleteArgv({ kind: 'nodePort', port: 30053 }, ip('10.244.1.5')), ['conntrack', '-D', '-p', 'udp', '--orig-port-dst', '30053', '--reply-src', '10.244.1.5']);
  t.same(conntrackDeleteArgv({ kind: 'serviceIP', ip: ip('10.96.0.10'), port: 53 }), ['conntrack', '-D', '-p', 'udp', '--orig-dst', '10.96.0.10', '--orig-port-dst', '53']);
  t.same(conntrackDeleteArgv({ kind: 'nodePort', port: 30053 }), ['conntrack', '-D', '-p', 'udp', '--orig-port-dst', '30053']);
});

t.test('invalid arguments are refused before anything runs', async (t) => {
  t.throws(() => conntrackDeleteArgv({ kind: 'serviceIP', ip: '10.96.0.300' as never, port: 53 }), RangeError);
  t.throws(() => conntrackDeleteArgv({ kind: 'serviceIP', ip: ip('10.96.0.1'), port: 0 }), RangeError);
  t.throws(() => conntrackDeleteArgv({ kind: 'nodePort', port: 99999 }), RangeError, 'conntrack itself would accept 99999 and match nothing');
  t.throws(() => conntrackDeleteArgv({ kind: 'nodePort', port: 30000 }, 'x' as never), RangeError);
  t.throws(() => conntrackDeleteArgv({ kind: 'bogus' } as never), RangeError);
});

t.test('parseDeletedCount', async (t) => {
  t.equal(parseDeletedCount('conntrack v1.4.7 (conntrack-tools): 3 flow entries have been deleted.\n'), 3);
  t.equal(parseDeletedCount('Invalid IP address'), null);
});

t.test('executor: runs in the netns, counts, treats "0 deleted" exit 1 as success, fails otherwise', async (t) => {
  const runner = new FakeRunner();
  let answer = { stdout: '', stderr: 'conntrack v1.4.7 (conntrack-tools): 2 flow entries have been deleted.\n', exitCode: 0 };
  runner.on((argv) => (argv[0] === 'conntrack' ? answer : undefined));
  const ct = new ConntrackExecutor({ runner, netns: '/var/run/netns/nn-x' });
  t.equal(await ct.deleteUDPEndpoint({ kind: 'serviceIP', ip: ip('10.96.0.10'), port: 53 }, ip('10.244.1.5')), 2);
  t.equal(runner.calls[0]!.opts.netns, '/var/run/netns/nn-x');
  t.same(runner.calls[0]!.argv.slice(0, 2), ['conntrack', '-D']);

  answer = { stdout: '', stderr: 'conntrack v1.4.7 (conntrack-tools): 0 flow entries have been deleted.\n', exitCode: 1 };
  t.equal(await ct.deleteUDPService({ kind: 'nodePort', port: 30053 }), 0);

  answer = { stdout: '', stderr: "conntrack v1.4.7 (conntrack-tools): Operation failed: invalid parameters\n", exitCode: 1 };
  await t.rejects(ct.deleteUDPService({ kind: 'nodePort', port: 30053 }), { code: ErrorCode.Exec, message: /invalid parameters/ });
  answer = { stdout: '', stderr: 'nsenter: cannot open /var/run/netns/nn-x: No such file or directory', exitCode: 1 };
  await t.rejects(ct.deleteUDPService({ kind: 'nodePort', port: 30053 }), NodenetError);
});

t.test('fake: deletes matching flows only, records, validates, can fail', async (t) => {
  const ct = new FakeConntrack()
    .addFlow({ origDst: ip('10.96.0.10'), origPortDst: 53, replySrc: ip('10.244.1.5') })
    .addFlow({ origDst: ip('10.96.0.10'), origPortDst: 53, replySrc: ip('10.244.2.5') })
    .addFlow({ origDst: ip('10.96.0.10'), origPortDst: 5353, replySrc: ip('10.244.1.5') })
    .addFlow({ origDst: ip('192.168.77.11'), origPortDst: 30053, replySrc: ip('10.244.1.5') });
  t.equal(await ct.deleteUDPEndpoint({ kind: 'serviceIP', ip: ip('10.96.0.10'), port: 53 }, ip('10.244.1.5')), 1);
  t.equal(await ct.deleteUDPEndpoint({ kind: 'nodePort', port: 30053 }, ip('10.244.2.5')), 0);
  t.equal(await ct.deleteUDPService({ kind: 'nodePort', port: 30053 }), 1);
  t.same(ct.table.map((f) => `${f.origDst}:${f.origPortDst}>${f.replySrc}`), ['10.96.0.10:53>10.244.2.5', '10.96.0.10:5353>10.244.1.5']);
  t.same(ct.describe(), ['endpoint 10.96.0.10:53 -> 10.244.1.5', 'endpoint *:30053 -> 10.244.2.5', 'service *:30053']);
  await t.rejects(ct.deleteUDPService({ kind: 'nodePort', port: 70000 }), RangeError);
  await t.rejects(ct.deleteUDPEndpoint({ kind: 'nodePort', port: 30000 }, '1.2.3' as never), RangeError);
  t.throws(() => ct.addFlow({ origDst: ip('10.96.0.1'), origPortDst: 0, replySrc: ip('10.244.1.1') }), RangeError);
  ct.failNext();
  await t.rejects(ct.deleteUDPService({ kind: 'nodePort', port: 30001 }), { code: ErrorCode.Exec });
  t.equal(ct.calls.length, 3, 'failed and refused calls are not recorded as done');
});
