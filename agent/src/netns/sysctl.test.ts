import t from 'tap';
import { FakeSysctl } from './sysctl.fake.js';
import { sysctlPath } from './sysctl.js';

t.test('keys: net.* with dots or slashes, nothing else', async (t) => {
  t.equal(sysctlPath('net.ipv4.ip_forward'), '/proc/sys/net/ipv4/ip_forward');
  t.equal(sysctlPath('net/ipv4/conf/all/route_localnet'), '/proc/sys/net/ipv4/conf/all/route_localnet');
  for (const bad of ['kernel.pid_max', 'net.ipv4/../../kernel', '', 'net']) t.throws(() => sysctlPath(bad), bad);
});

t.test('the fake: unknown keys are ENOENT, booleans take 0 or 1, writes only on change', async (t) => {
  const s = new FakeSysctl();
  await t.rejects(s.set('net.ipv4.nope', '1'), { code: 'ENOENT' });
  await t.rejects(s.set('net.ipv4.ip_forward', 'yes'), { code: 'EINVAL' });
  await s.set('net/ipv4/ip_forward', '1');
  await s.set('net.ipv4.ip_forward', '1');
  t.equal(await s.get('net.ipv4.ip_forward'), '1');
  t.same(s.writes, [{ key: 'net.ipv4.ip_forward', value: '1' }]);
});
