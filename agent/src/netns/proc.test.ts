import t from 'tap';
import { childPids, isAlive, parseProcStat, procStat } from './proc.js';

t.test('parseProcStat handles comm with spaces and parentheses', async (t) => {
  const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
  fields[0] = 'S';
  fields[1] = '77';
  fields[19] = '123456';
  const s = parseProcStat(`4242 (we (ird) name) ${fields.join(' ')}\n`);
  t.same(s, { pid: 4242, state: 'S', ppid: 77, startTime: '123456' });
  t.equal(parseProcStat('garbage'), null);
});

t.test('procStat and isAlive on this very process', async (t) => {
  const me = procStat(process.pid);
  t.equal(me?.pid, process.pid);
  t.equal(me?.ppid, process.ppid);
  t.ok(isAlive(process.pid));
  t.ok(isAlive(process.pid, me?.startTime));
  t.notOk(isAlive(process.pid, '1'), 'a different start time is another process');
  t.equal(procStat(2 ** 30), null);
  t.ok(childPids(process.ppid).includes(process.pid), 'we are a child of our parent');
});
