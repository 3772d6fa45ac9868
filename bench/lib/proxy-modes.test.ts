import t from 'tap';
import { FlagError } from '../../agent/src/cli/flags.js';
import { BENCH_MODES, isBenchMode, mode, modeLabel } from './proxy-modes.js';

t.test('mode: one of BENCH_MODES, the flag named when not', async (t) => {
  for (const m of BENCH_MODES) t.equal(mode('modes', m), m);
  t.throws(() => mode('modes', 'userspace'), FlagError);
  t.throws(() => mode('case', 'kernelspace'), /--case: unknown mode "kernelspace" \(one of iptables, nftables, iptables-legacy, nftables-sharded, ipvs\)/);
  t.equal(isBenchMode('ipvs'), true);
  t.equal(isBenchMode(3), false);
});

t.test('modeLabel: the backend, the shards, where IPVS ran', async (t) => {
  t.equal(modeLabel({ mode: 'nftables', iptablesBackend: null }), 'nftables');
  t.equal(modeLabel({ mode: 'nftables-sharded', iptablesBackend: null }), 'nftables (8 shards)');
  t.equal(modeLabel({ mode: 'iptables', iptablesBackend: 'nft' }), 'iptables (nft)');
  t.equal(modeLabel({ mode: 'iptables', iptablesBackend: null }), 'iptables (?)');
  t.equal(modeLabel({ mode: 'iptables-legacy', iptablesBackend: null }), 'iptables (legacy)');
  t.equal(modeLabel({ mode: 'ipvs', iptablesBackend: null }), 'IPVS');
  t.equal(modeLabel({ mode: 'ipvs', iptablesBackend: null, where: 'a qemu VM, kernel 6.1.0-57-amd64, tcg' }), 'IPVS (a qemu VM, kernel 6.1.0-57-amd64, tcg)');
});
