// `status`: the operator's first screen (admin/status.ts). `--json` for scripts, `--watch [s]`
// refreshes it until Ctrl-C.
import type { AdminCommand } from '../command.ts';
import { collectStatus, renderStatus } from '../status.ts';
import { serverUrls } from '../cluster.ts';
import { resolveNatsUrl } from '../../shared/runtime.ts';

/** The status's audit ends this long before the command's budget: 8 s of its 12 s at most, whatever the reads before it took. */
const STATUS_MARGIN_MS = 4000;

export const commands: AdminCommand[] = [
  {
    name: 'status',
    usage:
      'status [--json] [--watch [seconds]]   NATS servers, streams and replicas, consumers, live instances, unfinished jobs, the audit',
    async run(args, { nc, config, out, retry, deadline }) {
      const json = args.includes('--json');
      const w = args.indexOf('--watch');
      const everyS = w >= 0 ? Number(args[w + 1] && !args[w + 1]!.startsWith('--') ? args[w + 1] : 2) : 0;
      if (w >= 0 && !(everyS >= 1)) {
        out('usage: status [--json] [--watch [seconds >= 1]]');
        return 2;
      }
      const urls = serverUrls(resolveNatsUrl(config));
      const once = async () => {
        const s = await retry('the status reads (streams, consumers, buckets, services)', () =>
          collectStatus(nc, urls, { credsFile: config.nats.credsFile, config, auditDeadline: deadline() - STATUS_MARGIN_MS }),
        );
        if (json) out(JSON.stringify(s));
        else out((w >= 0 ? '\x1b[2J\x1b[H' : '') + renderStatus(s).join('\n'));
        return s;
      };
      if (w < 0) {
        const s = await once();
        return s.audit.ok ? 0 : s.audit.complete ? 1 : 4;
      }
      for (;;) {
        try {
          await once();
        } catch (e) {
          // the screen stays up through an outage and says what is wrong
          out(`${new Date().toISOString()} status failed: ${(e as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, everyS * 1000));
      }
    },
    watches: (args) => args.includes('--watch'),
  },
];
