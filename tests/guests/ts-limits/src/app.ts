// ts-limits: `echo` (the benchmarks' trivial call), `spin` (an endless loop: the runtime's
// deadline must end it) and `bomb` (allocation without bound: the memory cap must end it).

import { App } from '@atrium/sdk';

const app = App.fromManifest('atrium.app.yaml')
  .tool('echo', async (_ctx, args) => args)
  .tool('spin', async () => {
    let n = 0;
    for (;;) n = (n + 1) | 0;
  })
  .tool('bomb', async () => {
    const hoard: Uint8Array[] = [];
    for (;;) {
      const block = new Uint8Array(1024 * 1024);
      block.fill(1);
      hoard.push(block);
    }
  });

export default app;
