import t, { type Test } from 'tap';
import { FakeIptables } from './iptables.fake.js';
import { IptablesRestoreError, type JumpRule } from './iptables-types.js';
import { getChain, ruleSignature } from './iptables-parse.js';

const NF = { noflush: true } as const;

async function rejects(t: Test, f: FakeIptables, text: string, re: RegExp, line?: number): Promise<void> {
  const before = f.dump();
  await t.rejects(f.restore(text, NF), re);
  try {
    await f.restore(text, NF);
  } catch (e) {
    t.ok(e instanceof IptablesRestoreError, 'an IptablesRestoreError');
    if (line !== undefined) t.equal((e as IptablesRestoreError).line, line, `blames line ${line}`);
  }
  t.same(f.dump(), before, 'state unchanged');
}

t.test('rejects a jump to a chain that is neither declared nor existing', async (t) => {
  const f = new FakeIptables();
  await rejects(t, f, '*nat\n:FOO - [0:0]\n-A FOO -j BAR\nCOMMIT\n', /line 3 failed: Couldn't load target `BAR'/, 3);
  // Declared in the same input: fine. Existing from before: fine too.
  await f.restore('*nat\n:FOO - [0:0]\n:BAR - [0:0]\n-A FOO -j BAR\nCOMMIT\n', NF);
  await f.restore('*nat\n:BAZ - [0:0]\n-A BAZ -j BAR\nCOMMIT\n', NF);
  t.equal(getChain(f.dump(), 'nat', 'BAZ')!.rules.length, 1);
});

t.test('noflush: declared chains are flushed and rewritten, undeclared ones kept, built-in rules kept', async (t) => {
  const f = new FakeIptables();
  await f.restore('*nat\n:A - [0:0]\n:B - [0:0]\n-A A -j RETURN\n-A B -j RETURN\n-A PREROUTING -j A\nCOMMIT\n', NF);
  await f.restore('*nat\n:A - [0:0]\n-A A -j ACCEPT\n-A B -j ACCEPT\nCOMMIT\n', NF);
  const d = f.dump();
  t.same(getChain(d, 'nat', 'A')!.rules.map((r) => r.args), ['-j ACCEPT'], 'A flushed then rewritten');
  t.same(getChain(d, 'nat', 'B')!.rules.map((r) => r.args), ['-j RETURN', '-j ACCEPT'], 'B appended to, not flushed');
  t.same(getChain(d, 'nat', 'PREROUTING')!.rules.map((r) => r.args), ['-j A'], 'built-in chain untouched');
  t.equal(f.restores.length, 2);
});

t.test('-X: needs the chain flushed (declared) and unreferenced', async (t) => {
  const f = new FakeIptables();
  await f.restore('*nat\n:A - [0:0]\n:B - [0:0]\n-A A -j B\n-A B -j RETURN\n-A PREROUTING -j A\nCOMMIT\n', NF);
  await rejects(t, f, '*nat\n-X B\nCOMMIT\n', /Directory not empty/, 2);
  await rejects(t, f, '*nat\n:A - [0:0]\n-X A\nCOMMIT\n', /referenced by a rule in PREROUTING/, 3);
  await rejects(t, f, '*nat\n-X NOPE\nCOMMIT\n', /No chain/, 2);
  await rejects(t, f, '*nat\n-X PREROUTING\nCOMMIT\n', /built-in/, 2);
  // Flush A (dropping its reference to B) and B, then delete B: the kube-proxy stale-chain pattern.
  await f.restore('*nat\n:A - [0:0]\n:B - [0:0]\n-X B\nCOMMIT\n', NF);
  t.notOk(await f.chainExists('nat', 'B'));
  t.ok(await f.chainExists('nat', 'A'));
});

t.test('each *table block commits on its own, like the real tools', async (t) => {
  const f = new FakeIptables();
  await t.rejects(f.restore('*filter\n:F1 - [0:0]\nCOMMIT\n*nat\n-A NOPE -j ACCEPT\nCOMMIT\n', NF), /line 5 failed/);
  t.ok(await f.chainExists('filter', 'F1'), 'the filter block before the failing one was applied');
  t.equal(f.restores.length, 0, 'the input as a whole was not accepted');
});

t.test('targets in the wrong table or on the wrong hook, loops, unknown options', async (t) => {
  const f = new FakeIptables();
  await rejects(t, f, '*nat\n:T - [0:0]\n-A T -j DROP\nCOMMIT\n', /not intended for filtering/, 3);
  await rejects(t, f, '*nat\n:T - [0:0]\n-A T -p tcp -j REJECT\nCOMMIT\n', /not intended for filtering/, 3);
  await rejects(t, f, '*filter\n:T - [0:0]\n-A T -p tcp -j DNAT --to-destination 1.2.3.4:80\nCOMMIT\n', /only valid in the nat table/, 3);
  await rejects(t, f, '*filter\n:T - [0:0]\n-A T -j MASQUERADE\nCOMMIT\n', /only valid in the nat table/, 3);
  await rejects(t, f, '*nat\n:T - [0:0]\n-A T -p tcp -j DNAT --to-destination 1.2.3.4:80\n-A POSTROUTING -j T\nCOMMIT\n', /DNAT in chain T is reachable from POSTROUTING/, 3);
  await rejects(t, f, '*nat\n:T - [0:0]\n-A T -j MASQUERADE\n-A OUTPUT -j T\nCOMMIT\n', /MASQUERADE in chain T is reachable from OUTPUT/, 3);
  await rejects(t, f, '*nat\n:A - [0:0]\n:B - [0:0]\n-A A -j B\n-A B -j A\n-A PREROUTING -j A\nCOMMIT\n', /loop/);
  await rejects(t, f, '*nat\n:A - [0:0]\n-A A --bogus -j ACCEPT\nCOMMIT\n', /unknown option "--bogus"/, 3);
  await rejects(t, f, '*nat\n:A - [0:0]\nhello\nCOMMIT\n', /Bad argument/, 3);
  await rejects(t, f, '*nat\n:A - [0:0]\n', /COMMIT expected/);
  await rejects(t, f, '*nat\n-A NOPE -j ACCEPT\nCOMMIT\n', /No chain\/target\/match/, 2);
  await rejects(t, f, '*nat\n:A - [0:0]\n-A A -j PREROUTING\nCOMMIT\n', /built-in chain/, 3);
  // The same DNAT reachable from PREROUTING is fine.
  await f.restore('*nat\n:T - [0:0]\n-A T -p tcp -j DNAT --to-destination 1.2.3.4:80\n-A PREROUTING -j T\nCOMMIT\n', NF);
});

t.test('failNextRestore injects one failure', async (t) => {
  const f = new FakeIptables();
  f.failNextRestore('boom');
  await t.rejects(f.restore('*nat\nCOMMIT\n', NF), /boom/);
  await f.restore('*nat\nCOMMIT\n', NF);
});

const JUMP: JumpRule = { table: 'nat', builtinChain: 'PREROUTING', target: 'KUBE-SERVICES', comment: 'kubernetes service portals', position: 'prepend' };

t.test('ensureJumps: needs the target, inserts once, prepends or appends', async (t) => {
  const f = new FakeIptables();
  await t.rejects(f.ensureJumps([JUMP]), /Couldn't load target `KUBE-SERVICES'/);
  await f.restore('*nat\n:KUBE-SERVICES - [0:0]\n:OTHER - [0:0]\n-A PREROUTING -j OTHER\nCOMMIT\n', NF);
  t.equal(await f.ensureJumps([JUMP, JUMP]), 1, 'duplicates in one call count once');
  t.equal(await f.ensureJumps([JUMP]), 0, 'idempotent');
  t.equal(await f.ensureJump('nat', 'PREROUTING', 'OTHER', 'last', 'append', ['-m', 'addrtype', '--dst-type', 'LOCAL']), true);
  const pre = getChain(f.dump(), 'nat', 'PREROUTING')!.rules.map((r) => r.args);
  t.same(pre, ['-m comment --comment "kubernetes service portals" -j KUBE-SERVICES', '-j OTHER', '-m addrtype --dst-type LOCAL -m comment --comment last -j OTHER']);
  t.equal(await f.deleteJumps([JUMP, JUMP]), 1);
  t.equal(await f.deleteJumps([JUMP]), 0, 'deleting is idempotent');
  t.same(getChain(f.dump(), 'nat', 'PREROUTING')!.rules.map((r) => ruleSignature(r)).length, 2);
});

t.test('save prints iptables-save text that restores to the same state; flushEverything empties', async (t) => {
  const f = new FakeIptables();
  await f.restore('*nat\n:A - [0:0]\n-A A -m comment --comment "x y" -j RETURN\n-A PREROUTING -j A\nCOMMIT\n', NF);
  const saved = await f.save('nat');
  t.match(saved, /^\*nat\n:PREROUTING ACCEPT \[0:0\]\n[^]*:A - \[0:0\]\n-A PREROUTING -j A\n-A A -m comment --comment "x y" -j RETURN\nCOMMIT\n$/);
  const g = new FakeIptables();
  await g.restore(saved, NF);
  t.same([...(await g.listChains('nat'))], [...(await f.listChains('nat'))]);
  f.flushEverything();
  t.same([...(await f.listChains('nat'))], ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING']);
});

t.test('-S CHAIN in restore input: fails when the chain is missing, changes nothing when it is there', async (t) => {
  const f = new FakeIptables();
  await f.restore('*nat\n:KUBE-PROXY-CANARY - [0:0]\nCOMMIT\n', { noflush: true });
  const before = f.dump();
  await f.restore('*nat\n-S KUBE-PROXY-CANARY\nCOMMIT\n', { noflush: true });
  t.same(f.dump(), before);
  f.replaceTable('nat');
  const err = await f.restore('*nat\n-S KUBE-PROXY-CANARY\n:KUBE-SERVICES - [0:0]\nCOMMIT\n', { noflush: true }).then(() => null, (e: unknown) => e);
  t.ok(err instanceof IptablesRestoreError);
  t.equal((err as IptablesRestoreError).line, 2, 'the -S line is blamed');
  t.notOk(f.dump().tables.get('nat')!.chains.has('KUBE-SERVICES'), 'nothing of the failed block applied');
});
