// The bench site (site.ts) in a process of its own: `url`, `hits`, `reset` over IPC (startSiteProcess).
import { startSite } from './site.ts';

const site = await startSite(Number(process.argv[2]));
process.on('message', (m: string) => {
  if (m === 'url') process.send!({ url: site.url });
  else if (m === 'hits') void site.hits().then((hits) => process.send!({ hits }));
  else if (m === 'reset') {
    void site.reset();
    process.send!({ reset: true });
  }
});
