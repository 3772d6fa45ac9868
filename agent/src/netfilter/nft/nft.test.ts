import t from 'tap';
import { FakeRunner } from '../../exec/runner.fake.js';
import { NodenetError, ErrorCode } from '../../../../lib/errors/errors.js';
import { NftExecutor, nftApplyError } from './nft.js';
import { KERNEL_JSON } from './nft-testdata.js';

const ok = (stdout = '') => ({ stdout, stderr: '', exitCode: 0 });

t.test('apply runs nft -f - with the script on stdin, inside the namespace', async (t) => {
  const r = new FakeRunner().on((argv) => (argv[0] === 'nft' ? ok() : undefined));
  const nft = new NftExecutor({ runner: r, netns: '/var/run/netns/nn-x' });
  await nft.apply('add table ip t\n');
  t.same(r.calls[0]!.argv, ['nft', '-f', '-']);
  t.equal(r.calls[0]!.opts.input, 'add table ip t\n');
  t.equal(r.calls[0]!.opts.netns, '/var/run/netns/nn-x');
  t.equal(r.calls[0]!.opts.allowFailure, true);
});

t.test("a failed apply quotes nft's error and the lines around it", async (t) => {
  const script = Array.from({ length: 10 }, (_, i) => `add chain ip t c${i + 1}`).join('\n');
  const stderr = '/dev/stdin:7:16-18: Error: Could not process rule: No such file or directory\nadd chain ip t c7\n               ^^\n';
  const r = new FakeRunner().on(() => ({ stdout: '', stderr, exitCode: 1 }));
  const err = await new NftExecutor({ runner: r }).apply(script).catch((e: unknown) => e);
  t.ok(err instanceof NodenetError);
  if (!(err instanceof NodenetError)) return;
  t.equal(err.code, ErrorCode.RuleApply);
  t.equal(err.message, 'nft -f failed at line 7 of 10: /dev/stdin:7:16-18: Error: Could not process rule: No such file or directory');
  t.match(err.details, /\n {7}5 \| add chain ip t c5\n {7}6 \| add chain ip t c6\n> {6}7 \| add chain ip t c7\n {7}8 \| add chain ip t c8\n {7}9 \| add chain ip t c9$/);
  t.notMatch(err.details, /c4\n/);
});

t.test('nftApplyError without a line number still says what nft said', async (t) => {
  const e = nftApplyError('x', 'Error: syntax error, unexpected junk\n', 1);
  t.equal(e.message, 'nft -f failed: Error: syntax error, unexpected junk');
  t.equal(nftApplyError('x', '', 2).message, 'nft -f failed: nft exited 2');
});

t.test('listTable parses nft -j; a missing table is null', async (t) => {
  const r = new FakeRunner().on((argv) => {
    if (argv.join(' ') === 'nft -j list table ip kube-proxy') return ok(KERNEL_JSON);
    if (argv.join(' ') === 'nft -j list table ip gone') return { stdout: '', stderr: 'Error: No such file or directory\nlist table ip gone\n', exitCode: 1 };
    return undefined;
  });
  const nft = new NftExecutor({ runner: r });
  const info = await nft.listTable('ip', 'kube-proxy');
  t.equal(info!.chains.get('services')!.ruleCount, 2);
  t.equal(info!.sets.get('service-nodeports')!.elements.get('tcp . 3001')!.value, 'goto external-42NFTM6N-ns2/svc2/tcp/p80');
  t.equal(await nft.listTable('ip', 'gone'), null);
});

t.test('listTable surfaces other failures', async (t) => {
  const r = new FakeRunner().on(() => ({ stdout: '', stderr: 'Error: Operation not permitted\n', exitCode: 1 }));
  await t.rejects(new NftExecutor({ runner: r }).listTable('ip', 't'), /Operation not permitted/);
  await t.rejects(new NftExecutor({ runner: r }).listTableText('ip', 't'), /Operation not permitted/);
});

t.test('deleteTable is one idempotent transaction; tableExists reads nft -j list tables', async (t) => {
  const r = new FakeRunner().on((argv, opts) => {
    if (argv.join(' ') === 'nft -f -') return opts.input === 'add table ip t\ndelete table ip t\n' ? ok() : undefined;
    if (argv.join(' ') === 'nft -j list tables ip') {
      return ok('{"nftables":[{"metainfo":{"version":"1.0.6"}},{"table":{"family":"ip","name":"other","handle":3}},{"table":{"family":"ip","name":"t","handle":4}}]}');
    }
    return undefined;
  });
  const nft = new NftExecutor({ runner: r, netlinkBatch: false });
  await nft.deleteTable('ip', 't');
  t.equal(await nft.tableExists('ip', 't'), true);
  t.equal(await nft.tableExists('ip', 'kube-proxy'), false);
});

t.test('listNames reads chain and set names only (one table of the family), null for a missing table', async (t) => {
  const chains = JSON.stringify({
    nftables: [
      { metainfo: {} },
      { chain: { family: 'ip', table: 'kube-proxy', name: 'services', handle: 1 } },
      { chain: { family: 'ip', table: 'other', name: 'x', handle: 2 } },
      { chain: { family: 'ip', table: 'kube-proxy', name: 'service-ABC-ns/s/tcp/p', handle: 3 } },
    ],
  });
  const sets = JSON.stringify({
    nftables: [
      { metainfo: {} },
      { set: { family: 'ip', table: 'kube-proxy', name: 'cluster-ips', type: 'ipv4_addr', handle: 4 } },
      { set: { family: 'ip', table: 'kube-proxy', name: 'affinity-X-ns/s/tcp/p__10.0.0.1/80', type: 'ipv4_addr', flags: ['timeout'], timeout: 10800, handle: 5 } },
    ],
  });
  let present = true;
  const r = new FakeRunner().on((argv) => {
    const a = argv.join(' ');
    if (a === 'nft -j list tables ip') return ok(present ? '{"nftables":[{"table":{"family":"ip","name":"kube-proxy"}}]}' : '{"nftables":[]}');
    if (a === 'nft -j list chains ip') return ok(chains);
    if (a === 'nft -t -j list sets ip') return ok(sets);
    return undefined;
  });
  const nft = new NftExecutor({ runner: r, netlinkBatch: false });
  t.same(await nft.listNames('ip', 'kube-proxy'), {
    chains: ['services', 'service-ABC-ns/s/tcp/p'],
    sets: [
      { name: 'cluster-ips', flags: [], timeout: null },
      { name: 'affinity-X-ns/s/tcp/p__10.0.0.1/80', flags: ['timeout'], timeout: 10800 },
    ],
  });
  present = false;
  t.equal(await nft.listNames('ip', 'kube-proxy'), null);
});

t.test('objectExists lists one object: true, false for a missing table or object, other failures thrown', async (t) => {
  const r = new FakeRunner().on((argv) => {
    const cmd = argv.join(' ');
    if (cmd === 'nft list chain ip kube-proxy services') return ok('table ip kube-proxy {\n\tchain services {\n\t}\n}\n');
    if (cmd === 'nft list chain ip gone services') return { stdout: '', stderr: 'Error: No such file or directory\nlist chain ip gone services\n             ^^^^\n', exitCode: 1 };
    if (cmd === 'nft list chain ip kube-proxy nope') return { stdout: '', stderr: 'Error: No such file or directory\n', exitCode: 1 };
    if (cmd === 'nft list chain ip denied services') return { stdout: '', stderr: 'Error: Operation not permitted\n', exitCode: 1 };
    return undefined;
  });
  const nft = new NftExecutor({ runner: r, netlinkBatch: false });
  t.equal(await nft.objectExists('ip', 'kube-proxy', 'chain', 'services'), true);
  t.equal(await nft.objectExists('ip', 'gone', 'chain', 'services'), false);
  t.equal(await nft.objectExists('ip', 'kube-proxy', 'chain', 'nope'), false);
  await t.rejects(nft.objectExists('ip', 'denied', 'chain', 'services'), /Operation not permitted/);
});
