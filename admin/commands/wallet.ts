// Operator commands for money: settle a dev invoice, grant Payloads, audit every invariant.
import type { AdminCommand } from '../command.ts';
import { keysBucket, lookupKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { newId } from '../../shared/ids.ts';
import { jobDocumentInBucketMs } from '../../shared/jobs/retention.ts';

/**
 * The audit's reads end this long before the command's budget (admin/main.ts, 12 s from the
 * command's start: 8 s of reads): the rest is for a read made again after the reconciliation,
 * the output, and the connection's close. The reads keep to it exactly (shared/audit-read.ts).
 */
const AUDIT_READS_MARGIN_MS = 4000;

/** `--name value` out of args; returns [value, rest]. */
function option(args: string[], name: string): [string | undefined, string[]] {
  const i = args.indexOf(name);
  if (i < 0) return [undefined, args];
  return [args[i + 1], [...args.slice(0, i), ...args.slice(i + 2)]];
}

export const commands: AdminCommand[] = [
  {
    name: 'topup pay',
    usage: 'topup pay <topupId>         dev Lightning backend only: mark the invoice paid (the top-up is credited once)',
    async run(args, { nc, config, out, retry }) {
      const id = args[0];
      if (!id) {
        out('usage: topup pay <topupId>');
        return 2;
      }
      if (config.wallet.lightning.backend !== 'dev') {
        out(`refused: the Lightning backend is ${config.wallet.lightning.backend}; only dev invoices are paid by command`);
        return 2;
      }
      // paying again is answered alreadyPaid: safe to repeat through a failover
      const r = await retry('wallet.topupPay', () => wallet.topupPay(nc, id));
      out(`${r.topup.id} ${r.topup.status}${r.alreadyPaid ? ' (was already paid)' : ''}; wallet balance ${r.balance} Payloads`);
      return 0;
    },
  },
  {
    name: 'wallet grant',
    usage: 'wallet grant <key|walletId> <payloads> --reason "..."   add (or, negative, take back) Payloads',
    async run(argsIn, { nc, out, retry }) {
      const [reason, args] = option(argsIn, '--reason');
      const [who, amountText] = args;
      const amount = Number(amountText);
      if (!who || !Number.isSafeInteger(amount) || amount === 0 || !reason?.trim()) {
        out('usage: wallet grant <key|walletId> <payloads> --reason "..."');
        return 2;
      }
      let walletId = who;
      if (who.startsWith('pk_')) {
        const rec = await retry('the keys bucket', async () => lookupKey(await keysBucket(nc), who));
        if (!rec) {
          out('unknown key');
          return 1;
        }
        walletId = rec.walletId;
      }
      // one grant id for every try: a try whose answer was lost is the same grant, not a second one
      const grantId = newId('admin');
      const r = await retry('wallet.grant', () => wallet.grant(nc, walletId, amount, reason, grantId));
      out(`wallet ${walletId}: ${amount > 0 ? '+' : ''}${amount} Payloads (entry ${r.entryId}); balance ${r.balance}`);
      return 0;
    },
  },
  {
    name: 'audit',
    usage:
      "audit [--all | --within <seconds>]   reconcile with the Lightning node (credit paid top-ups the ledger lost), then check every money invariant; exit 1 on any violation. The reads stop at the command's budget and say how far they got (exit 4); --within gives them that long instead, --all reads everything, however long it takes",
    watches: (args) => args.includes('--all') || args.includes('--within'),
    async run(args, { nc, out, retry, config, deadline: budget }) {
      // every ledger entry and job is read: at a few thousand entries a second a store of 1 M jobs takes minutes
      const [withinText] = option(args, '--within');
      const within = withinText === undefined ? undefined : Number(withinText);
      if (within !== undefined && !(within >= 0)) {
        out('usage: audit [--all | --within <seconds>]');
        return 2;
      }
      const deadline = args.includes('--all')
        ? undefined
        : within !== undefined
          ? Date.now() + within * 1000
          : budget() - AUDIT_READS_MARGIN_MS;
      // The wallet reconciles (it owns the ledger and the node connection); without a wallet running
      // the invariants are still checked and the missing reconciliation is said, not hidden. The
      // reconciliation and the audit's reads run side by side, so a slow wallet (a node down) does
      // not eat the reads' share of the command's budget; the reads are made again only when the
      // reconciliation credited something they may have missed.
      let unpaid = 0;
      const reconciled = Promise.race([
        wallet.reconcile(nc),
        new Promise<never>((_, rej) => setTimeout(() => rej(new Error('no answer within 3 s')), 3000).unref()),
      ]);
      const read = () =>
        retry("the audit's reads (LEDGER, jobs, topups)", () =>
          audit(nc, { keptMs: jobDocumentInBucketMs(config), ...(deadline ? { deadline } : {}) }),
        );
      let [rec, r] = await Promise.all([reconciled.catch((e: Error) => e), read()]);
      if (rec instanceof Error) {
        out(`lightning: not reconciled (${rec.message}); is a wallet running?`);
      } else {
        out(`lightning (${rec.backend}): ${rec.paidInvoices} paid invoices, ${rec.topups} top-ups`);
        for (const c of rec.credited)
          out(
            `CREDITED topup ${c.topupId}: invoice ${c.paymentHash} was paid but not in the ledger; ${c.payloads} Payloads to wallet ${c.walletId}`,
          );
        for (const u of rec.unpaidCredits)
          out(
            `VIOLATION topup ${u.topupId || '?'}: credited ${u.payloads} Payloads to wallet ${u.walletId} (entry ${u.entryId}) but the node does not list invoice ${u.paymentHash ?? '?'} as paid`,
          );
        if (rec.unknownPaid.length)
          out(
            `note: ${rec.unknownPaid.length} paid invoice(s) belong to no top-up (${rec.unknownPaid
              .slice(0, 5)
              .map((p) => p.paymentHash)
              .join(', ')}${rec.unknownPaid.length > 5 ? ', ...' : ''})`,
          );
        unpaid = rec.unpaidCredits.length;
        if (rec.credited.length) r = await read();
      }
      if (!r.complete) {
        out(
          `audit not finished ${within !== undefined ? `within ${within} s` : "within the command's budget"}: ${r.progress}; nothing judged. Run \`npm run admin -- audit --all\` (no budget) when the system is quiet.`,
        );
        return unpaid ? 1 : 4;
      }
      out(`${r.wallets} wallets, ${r.entries} ledger entries, ${r.jobs} jobs, ${r.topups} top-ups`);
      for (const v of r.violations) out(`VIOLATION ${v}`);
      const total = r.violations.length + unpaid;
      out(total ? `${total} violation(s)` : 'ok: no violation');
      return total ? 1 : 0;
    },
  },
];
