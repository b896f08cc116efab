#!/usr/bin/env python3
"""model_vs_hardware.py - the step model against published hardware tables.

Every row is a program that ran on hardware, timed by the model variant of
the runtime that ran it, next to what was measured: model / measured per
row, then a summary per table, the rows some constant was fitted to
("fit") apart from those that were not ("held-out", "check").

  A. MSCCL's own AllReduce programs for ND H100 v5 (8 x H100, MSCCL's
     executor on NCCL 2.18.3, fp16, in place), each size with the file
     MSCCL selects for it. The XML files themselves are timed when the
     shared calibration folder is there (-x DIR; they are not shipped);
     ccsynth's rebuild of the ring programs (sketches/dsl/
     ring_allreduce_channels.ccl, the same protocol, channels,
     threadblocks and chunks per loop) always.
  B. NCCL 2.18.3 in the same table, as NCCL's tuner runs it there (derived
     from its tuning.cc and enqueue.cc): its LL ring up to 256 KiB on the
     channels it launches per size (`simulate --target nccl
     --nccl-channels 24`), NVLS from 512 KiB (the in-network runtime
     model); AllGather with the LL ring.
  C. The calibration table of docs/calibration.md (DGX A100 / H100 / B200,
     multi-node, NVLS and CollNet), as the unit test times it.

A benchmark, not a test: it prints, it does not fail. The unit test
`CompilerTests "[calibration]"` checks table C within 15%.

Usage: bench/model_vs_hardware.py [-b BUILD] [-x SHARED_MSCCL_DIR]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K, M, G = 1024, 1024 ** 2, 1024 ** 3

# Azure/msccl docs/performance-nd-h100-v5.md (shared calibration README):
# size, NCCL 2.18.3 us, MSCCL us, the file MSCCL selects; and which rows a
# constant of the H100 step model was fitted to.
ND_H100_V5 = [
    ('1K', 13.12, 7.50, 'ap-1pass'), ('2K', 14.39, 7.48, 'ap-1pass'),
    ('4K', 15.28, 7.49, 'ap-1pass'), ('8K', 15.69, 7.67, 'ap-1pass'),
    ('16K', 16.64, 8.03, 'ap-1pass'), ('32K', 19.3, 9.08, 'ap-1pass'),
    ('64K', 20.0, 10.36, 'ap4ll'), ('128K', 20.42, 11.06, 'ap4ll'),
    ('256K', 20.5, 12.86, 'ap4ll'), ('512K', 29.89, 19.14, 'r48ll'),
    ('1M', 31.94, 22.31, 'r48ll'), ('2M', 37.95, 33.43, 'r48ll128'),
    ('4M', 49.28, 43.97, 'r48ll128'), ('8M', 77.01, 68.16, 'r48ll128'),
    ('16M', 116.0, 115.7, 'r48ll128'),
]
MSCCL_FIT = {'1K', '32K', '64K', '256K', '512K', '1M', '2M', '16M'}
NCCL_AR_FIT = {'1K', '32K', '256K'}
# NCCL 2.18.3 AllGather, same table (total bytes).
NCCL_AG = [('1K', 9.54, 'fit'), ('2K', 9.8, 'held-out'),
           ('4K', 9.78, 'held-out'), ('8K', 9.78, 'held-out'),
           ('64K', 12.87, 'fit')]
# NCCL 2.18.3 on 8 x H100 picks its LL ring below about 490 KB and NVLS
# above (tuning.cc: ring LL 15.0 us + 50.1 GB/s against NVLS 23 us + 266.7).
NCCL_RING_BELOW = 490 * 1000


def size_bytes(s):
    unit = s[-1]
    return int(float(s[:-1]) * {'K': K, 'M': M, 'G': G}[unit]) \
        if unit in 'KMG' else int(s)


class Bench:
    def __init__(self, build):
        self.ccsynth = os.path.join(build, 'tools', 'ccsynth', 'ccsynth')
        if not os.access(self.ccsynth, os.X_OK):
            sys.exit(f'build ccsynth first ({self.ccsynth})')
        self.tmp = tempfile.mkdtemp()
        self.rows = []  # (table, id, model, measured, set, note)

    def run(self, *args):
        out = subprocess.run([self.ccsynth, *args], capture_output=True,
                             text=True)
        if out.returncode:
            raise RuntimeError(' '.join(args) + ': ' + out.stderr.strip())
        return out.stdout

    def simulate(self, path, sizes, *flags):
        out = json.loads(self.run('simulate', path, '--sizes',
                                  ','.join(sizes), '--json', *flags))
        return {int(r['bytes']): r for r in out[0]['results']}

    def baseline(self, kind, topo, coll, inplace):
        path = os.path.join(self.tmp, f'{kind}-{topo}-{coll}-{inplace}.json')
        if not os.path.exists(path):
            self.run('baseline', kind, '-t', topo, '-c', coll, '-o', path,
                     *(['--inplace'] if inplace else []))
        return path

    def rings(self, path):
        with open(path) as f:
            return max(1, len({t['channel'] for t in
                               json.load(f)['transfers']}))

    def add(self, table, rid, model, measured, use, note=''):
        self.rows.append((table, rid, model, measured, use, note))

    # A. MSCCL's programs.
    def msccl(self, shared):
        ring = os.path.join(ROOT, 'sketches/dsl/ring_allreduce_channels.ccl')
        rebuilt = {}
        for proto in ('LL', 'LL128'):
            xml = os.path.join(self.tmp, f'ring-channels-{proto}.xml')
            self.run('compile', ring, '-o', xml, '--no-predict',
                     '--protocol', proto)
            rebuilt[proto] = xml
        by_file = {}
        for s, _, measured, f in ND_H100_V5:
            by_file.setdefault(f, []).append((s, measured))
        for f, rows in by_file.items():
            sizes = [s for s, _ in rows]
            proto = {'r48ll': 'LL', 'r48ll128': 'LL128'}.get(f)
            timed = {}
            if shared and os.path.exists(os.path.join(shared, f + '.xml')):
                timed['file'] = self.simulate(
                    os.path.join(shared, f + '.xml'), sizes, '--topo', 'ndv5',
                    '--level', 'steps')
            if proto:
                timed['rebuilt'] = self.simulate(
                    rebuilt[proto], sizes, '--topo', 'ndv5', '--level',
                    'steps')
            for s, measured in rows:
                use = 'fit' if s in MSCCL_FIT else 'held-out'
                for how, t in timed.items():
                    self.add('A', f'{f} {s} ({how})',
                             t[size_bytes(s)]['time_us'], measured, use)
        if shared and os.path.exists(os.path.join(shared, 'r48ll.xml')):
            self.structure(os.path.join(shared, 'r48ll.xml'), rebuilt['LL'])

    def structure(self, theirs, ours):
        """The lowered structure of the rebuild against MSCCL's file."""
        def shape(path):
            with open(path) as f:
                text = f.read()
            algo = re.search(r'<algo [^>]*>', text).group(0)
            attr = dict(re.findall(r'(\w+)="([^"]*)"', algo))
            gpu0 = text[text.index('<gpu id="0"'):text.index('</gpu>')]
            steps = {}
            for t in re.findall(r'type="(\w+)"', gpu0):
                steps[t] = steps.get(t, 0) + 1
            return (attr['proto'], attr['nchannels'], attr['nchunksperloop'],
                    gpu0.count('<tb '), sorted(steps.items()))
        a, b = shape(theirs), shape(ours)
        print('structure of the rebuilt ring against MSCCL\'s r48ll.xml '
              '(protocol, channels, chunks per loop, threadblocks per rank, '
              'steps of rank 0 by type):')
        print('  MSCCL  ', a)
        print('  rebuilt', b, '(same)' if a == b else '(DIFFERS)')

    # B. NCCL 2.18.3.
    def nccl(self):
        ar = self.baseline('ring', 'ndv5', 'allreduce', True)
        ag = self.baseline('ring', 'ndv5', 'allgather', True)
        nvls = self.baseline('nvls', 'ndv5', 'allreduce', True)
        ring_sizes = [s for s, *_ in ND_H100_V5
                      if size_bytes(s) < NCCL_RING_BELOW]
        nvls_sizes = [s for s, *_ in ND_H100_V5
                      if size_bytes(s) >= NCCL_RING_BELOW]
        ring = self.simulate(ar, ring_sizes, '--topo', 'ndv5', '--level',
                             'steps', '--target', 'nccl', '--protocol', 'LL',
                             '--nccl-channels', '24')
        switch = self.simulate(nvls, nvls_sizes, '--topo', 'ndv5', '--level',
                               'steps')
        for s, measured, *_ in ND_H100_V5:
            b = size_bytes(s)
            if b < NCCL_RING_BELOW:
                self.add('B', f'allreduce {s} (ring LL)',
                         ring[b]['time_us'], measured,
                         'fit' if s in NCCL_AR_FIT else 'held-out')
            else:
                self.add('B', f'allreduce {s} (NVLS)', switch[b]['time_us'],
                         measured, 'check')
        gather = self.simulate(ag, [s for s, *_ in NCCL_AG], '--topo', 'ndv5',
                               '--level', 'steps', '--target', 'nccl',
                               '--protocol', 'LL', '--nccl-channels', '24')
        for s, measured, use in NCCL_AG:
            self.add('B', f'allgather {s} (ring LL)',
                     gather[size_bytes(s)]['time_us'], measured, use)

    # C. The calibration table.
    def table(self):
        with open(os.path.join(ROOT, 'docs/calibration.md')) as f:
            text = f.read()
        body = text[text.index('<!-- calibration-table:begin -->'):
                    text.index('<!-- calibration-table:end -->')]
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) < 10 or cells[0] in ('id', '---'):
                continue
            rid, topo, coll, size, published, metric, proto, channels, \
                _, program = cells[:10]
            use = cells[10] if len(cells) > 10 else 'check'
            model = self.table_row(topo, coll, size, proto, int(channels),
                                   program)
            value = model['time_us'] if metric == 'us' else \
                model['busbw_gbps']
            self.add('C', rid, value, float(published), use,
                     'busbw: higher is faster' if metric != 'us' else '')

    def table_row(self, topo, coll, size, proto, channels, program):
        kind = program.split(' ', 1)[1] if ' ' in program else program
        b = size_bytes(size)
        if program == 'msccl ring-channels':
            xml = os.path.join(self.tmp, f'ring-channels-{proto}.xml')
            if not os.path.exists(xml):
                self.run('compile', os.path.join(
                    ROOT, 'sketches/dsl/ring_allreduce_channels.ccl'),
                    '-o', xml, '--no-predict', '--protocol', proto)
            return self.simulate(xml, [size], '--topo', topo, '--level',
                                 'steps')[b]
        if kind != 'ring':
            path = self.baseline(kind, topo, coll, False)
            return self.simulate(path, [size], '--level', 'steps')[b]
        # NCCL's rings, as its kernel runs them: the shipped ring programs
        # are in place (`dsl ring`), the machine's rings out of place.
        path = self.baseline('ring', topo, coll, program == 'dsl ring')
        instances = max(1, channels // self.rings(path))
        return self.simulate(path, [size], '--topo', topo, '--level',
                             'steps', '--target', 'nccl', '--protocol', proto,
                             '--instances', str(instances))[b]

    def report(self):
        names = {'A': "A. MSCCL's AllReduce programs, ND H100 v5 "
                      '(MSCCL executor on NCCL 2.18.3)',
                 'B': 'B. NCCL 2.18.3, ND H100 v5, as its tuner runs it',
                 'C': 'C. the calibration table (docs/calibration.md)'}
        for table in 'ABC':
            rows = [r for r in self.rows if r[0] == table]
            if not rows:
                continue
            print()
            print(names[table])
            print(f'  {"row":44} {"model":>10} {"measured":>10} '
                  f'{"model/meas":>10}  set')
            for _, rid, model, measured, use, note in rows:
                ratio = model / measured
                flag = '' if abs(ratio - 1) <= 0.15 else '  (outside 15%)'
                print(f'  {rid:44} {model:10.2f} {measured:10.2f} '
                      f'{ratio:10.3f}  {use}{flag}'
                      + (f'  [{note}]' if note else ''))
            for use in ('fit', 'held-out', 'check'):
                sel = [r for r in rows if r[4] == use]
                if not sel:
                    continue
                errs = [math.log(r[2] / r[3]) for r in sel]
                within = sum(1 for r in sel if abs(r[2] / r[3] - 1) <= 0.15)
                print(f'  {use:9} {within}/{len(sel)} within 15%; '
                      f'rms log error {math.sqrt(sum(e * e for e in errs) / len(errs)):.3f}, '
                      f'worst model/measured '
                      f'{max((r[2] / r[3] for r in sel), key=lambda x: abs(math.log(x))):.3f}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('-b', '--build', default='build')
    default_shared = os.path.join(ROOT, '..', 'shared', 'calibration',
                                  'msccl-ndv5')
    ap.add_argument('-x', '--shared', default=default_shared,
                    help='folder of MSCCL\'s ND H100 v5 XML files (timed '
                         'when present)')
    a = ap.parse_args()
    bench = Bench(a.build)
    shared = a.shared if os.path.isdir(a.shared) else None
    if not shared:
        print(f'(no {a.shared}: MSCCL\'s own files are not timed, only the '
              'rebuilt rings)')
    try:
        bench.msccl(shared)
        bench.nccl()
        bench.table()
    except RuntimeError as e:
        sys.exit(f'model_vs_hardware: {e}')
    bench.report()
    print()
    print('All figures of the model are the step model\'s (ccsynth simulate '
          '--level steps); every measured figure is the published one of the '
          'same program (sources: docs/calibration.md).')


if __name__ == '__main__':
    main()
