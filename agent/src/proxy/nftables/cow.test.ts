import t from 'tap';
import { CowMap, CowSet } from './cow.js';

/** A small deterministic PRNG (the sequence is fixed, failures reproduce). */
function rng(seed: number): (n: number) => number {
  let x = seed;
  return (n) => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x % n;
  };
}

t.test('CowSet reads like a copy of its source and never changes the source', async (t) => {
  const rnd = rng(7);
  const base = new Set(Array.from({ length: 200 }, (_, i) => `c${i}`));
  let model = new Set(base);
  let cow: ReadonlySet<string> = base;
  const generations: [ReadonlySet<string>, Set<string>][] = [[base, new Set(base)]];
  for (let g = 0; g < 60; g++) {
    const next = CowSet.from(cow);
    const m = new Set(model);
    for (let k = 0; k < 1 + rnd(30); k++) {
      const v = `c${rnd(260)}`;
      if (rnd(2)) {
        next.add(v);
        m.add(v);
      } else t.equal(next.delete(v), m.delete(v), 'delete says whether it was there');
    }
    t.equal(next.size, m.size, `size, generation ${g}`);
    t.same([...next].sort(), [...m].sort(), `contents, generation ${g}`);
    for (let v = 0; v < 260; v++) if (next.has(`c${v}`) !== m.has(`c${v}`)) t.fail(`has c${v}`);
    generations.push([next, m]);
    cow = next;
    model = m;
  }
  // Every earlier generation still reads as it did when it was made (render is pure).
  for (const [s, m] of generations) t.same([...s].sort(), [...m].sort());
});

t.test('CowMap reads like a copy of its source and never changes the source', async (t) => {
  const rnd = rng(11);
  const base = new Map<string, number>(Array.from({ length: 150 }, (_, i) => [`k${i}`, i]));
  let model = new Map(base);
  let cow: ReadonlyMap<string, number> = base;
  const generations: [ReadonlyMap<string, number>, Map<string, number>][] = [];
  for (let g = 0; g < 60; g++) {
    const next = CowMap.from(cow);
    const m = new Map(model);
    for (let k = 0; k < 1 + rnd(25); k++) {
      const key = `k${rnd(200)}`;
      if (rnd(3)) {
        const v = rnd(1000);
        next.set(key, v);
        m.set(key, v);
      } else t.equal(next.delete(key), m.delete(key), 'delete says whether it was there');
    }
    t.equal(next.size, m.size, `size, generation ${g}`);
    t.same([...next.entries()].sort(), [...m.entries()].sort(), `entries, generation ${g}`);
    for (let i = 0; i < 200; i++) if (next.get(`k${i}`) !== m.get(`k${i}`) || next.has(`k${i}`) !== m.has(`k${i}`)) t.fail(`k${i}`);
    t.same([...next.keys()].sort(), [...m.keys()].sort());
    t.same([...next.values()].sort(), [...m.values()].sort());
    generations.push([next, m]);
    cow = next;
    model = m;
  }
  for (const [s, m] of generations) t.same([...s.entries()].sort(), [...m.entries()].sort());
  t.same([...base.keys()].length, 150, 'the base was never written');
});
