// The account page: no framework. Makes a key (after a proof of work), then shows balance,
// top-ups (invoice, QR code, live status) and recent transactions, using the public API with the key.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  let apiKey = '';
  let cfg = { devPay: false, bonus: [] };
  let pollTimer = 0;

  // ---- sha256 of a short ASCII string (one 64-byte block: input of at most 55 bytes) -------------
  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
  const W = new Uint32Array(64);
  /** First 32-bit word of sha256(s): enough to count up to 32 leading zero bits. */
  function sha256FirstWord(s) {
    W.fill(0, 0, 16);
    for (let i = 0; i < s.length; i++) W[i >> 2] |= s.charCodeAt(i) << (24 - (i & 3) * 8);
    W[s.length >> 2] |= 0x80 << (24 - (s.length & 3) * 8);
    W[15] = s.length * 8;
    for (let i = 16; i < 64; i++) {
      const a = W[i - 15], b = W[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let h0 = 0x6a09e667, h1 = 0xbb67ae85, h2 = 0x3c6ef372, h3 = 0xa54ff53a, h4 = 0x510e527f, h5 = 0x9b05688c, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
    for (let i = 0; i < 64; i++) {
      const S1 = ((h4 >>> 6) | (h4 << 26)) ^ ((h4 >>> 11) | (h4 << 21)) ^ ((h4 >>> 25) | (h4 << 7));
      const ch = (h4 & h5) ^ (~h4 & h6);
      const t1 = (h7 + S1 + ch + K[i] + W[i]) | 0;
      const S0 = ((h0 >>> 2) | (h0 << 30)) ^ ((h0 >>> 13) | (h0 << 19)) ^ ((h0 >>> 22) | (h0 << 10));
      const maj = (h0 & h1) ^ (h0 & h2) ^ (h1 & h2);
      const t2 = (S0 + maj) | 0;
      h7 = h6; h6 = h5; h5 = h4; h4 = (h3 + t1) | 0; h3 = h2; h2 = h1; h1 = h0; h0 = (t1 + t2) | 0;
    }
    return (h0 + 0x6a09e667) >>> 0;
  }
  const zeroBits = (w) => Math.clz32(w);

  /** Find a nonce in slices, yielding to the page between slices so it stays responsive. */
  function solve(id, bits, onProgress) {
    return new Promise((resolve) => {
      let nonce = 0;
      const started = performance.now();
      const slice = () => {
        const end = nonce + 50000;
        for (; nonce < end; nonce++) {
          if (zeroBits(sha256FirstWord(id + ':' + nonce)) >= bits) return resolve(String(nonce));
        }
        onProgress(nonce, performance.now() - started);
        setTimeout(slice, 0);
      };
      slice();
    });
  }

  // ---- API ------------------------------------------------------------------------------------------
  async function api(method, path, body) {
    const headers = {};
    if (apiKey) headers.authorization = 'Bearer ' + apiKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) {
      const err = new Error((json.error && json.error.message) || ('HTTP ' + res.status));
      err.code = json.error && json.error.code;
      err.status = res.status;
      throw err;
    }
    return json;
  }

  const fmt = (n) => n.toLocaleString('en-US');
  const eur = (payloads) => (payloads / 10000).toFixed(2);

  // ---- key creation -----------------------------------------------------------------------------------
  $('create-btn').addEventListener('click', async () => {
    const btn = $('create-btn');
    btn.disabled = true;
    const status = $('pow-status');
    try {
      status.textContent = 'Fetching a challenge...';
      const ch = await api('GET', '/account/challenge');
      status.textContent = 'Working (' + ch.bits + ' bits)...';
      const nonce = await solve(ch.id, ch.bits, (n, ms) => {
        status.textContent = 'Working: ' + fmt(n) + ' hashes tried (' + Math.round(n / ms) + ' k/s)...';
      });
      status.textContent = 'Creating the key...';
      const invite = $('invite-input').value.trim();
      const made = await api('POST', '/account/keys', invite ? { id: ch.id, nonce, invite } : { id: ch.id, nonce });
      $('key-text').textContent = made.key;
      $('new-key').hidden = false;
      status.textContent = 'Done.';
      await openWallet(made.key);
    } catch (e) {
      status.textContent = 'Could not create a key: ' + e.message;
    } finally {
      btn.disabled = false;
    }
  });

  $('copy-btn').addEventListener('click', async () => {
    await copy($('key-text').textContent, $('copy-btn'));
  });

  async function copy(text, btn) {
    try {
      await navigator.clipboard.writeText(text);
      btn.textContent = 'Copied';
    } catch {
      const r = document.createRange();
      r.selectNodeContents(btn.previousElementSibling || btn);
      getSelection().removeAllRanges();
      getSelection().addRange(r);
      btn.textContent = 'Press Ctrl+C';
    }
    setTimeout(() => { btn.textContent = btn.id === 'inv-copy' ? 'Copy invoice' : 'Copy'; }, 2000);
  }

  // ---- wallet ---------------------------------------------------------------------------------------------
  $('key-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('key-error').textContent = '';
    try {
      await openWallet($('key-input').value.trim());
    } catch (e) {
      $('key-error').textContent = e.code === 'unauthorized' ? 'This key is not known.' : e.message;
    }
  });

  async function openWallet(key) {
    const prev = apiKey;
    apiKey = key;
    try {
      await refresh();
    } catch (e) {
      apiKey = prev;
      throw e;
    }
    $('wallet').hidden = false;
  }

  function showBalance(b) {
    $('balance').textContent = fmt(b);
    $('balance-eur').textContent = eur(b);
  }

  async function refresh() {
    const b = await api('GET', '/v1/balance');
    showBalance(b.balance);
    if ($('webhook-secret').textContent === '…') $('webhook-secret').textContent = (await api('GET', '/v1/webhooks/secret')).secret;
    const tx = await api('GET', '/v1/transactions');
    const rows = tx.entries.slice(0, 20).map((e) => {
      const tr = document.createElement('tr');
      const what = e.type === 'charge' ? 'Job ' + e.jobId
        : e.type === 'refund' ? 'Refund ' + e.jobId + ' / ' + e.resultKey
        : e.type === 'topup' ? 'Top-up' + (e.bonus ? ' (incl. ' + fmt(e.bonus) + ' bonus)' : '')
        : e.type === 'grant' ? 'Grant: ' + (e.reason || '') : e.type;
      const cells = [new Date(e.at).toLocaleString(), what, (e.amount > 0 ? '+' : '') + fmt(e.amount), fmt(e.balanceAfter)];
      cells.forEach((c, i) => {
        const td = document.createElement('td');
        td.textContent = c;
        if (i === 1) td.className = 'what';
        if (i >= 2) td.className = 'num' + (i === 2 ? (e.amount < 0 ? ' neg' : ' pos') : '');
        tr.appendChild(td);
      });
      return tr;
    });
    $('tx').replaceChildren(...rows);
    if (!rows.length) {
      const tr = document.createElement('tr');
      const td = document.createElement('td');
      td.colSpan = 4;
      td.className = 'muted';
      td.textContent = 'No transactions yet.';
      tr.appendChild(td);
      $('tx').appendChild(tr);
    }
  }

  // ---- top-up -------------------------------------------------------------------------------------------------
  function bonusText() {
    const v = Number($('eur').value);
    const tier = (cfg.bonus || []).filter((t) => v >= t.minEur).sort((a, b) => b.percent - a.percent)[0];
    const tiers = (cfg.bonus || []).map((t) => '+' + t.percent + ' % from ' + t.minEur + ' EUR').join(', ');
    $('bonus-info').textContent = (tier ? 'This amount gets ' + tier.percent + ' % bonus. ' : '') + (tiers ? 'Bonus: ' + tiers + '.' : '');
  }
  $('eur').addEventListener('input', bonusText);

  $('topup-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('topup-error').textContent = '';
    clearTimeout(pollTimer);
    try {
      const r = await api('POST', '/v1/topups', { eur: Number($('eur').value) });
      showInvoice(r.topup);
      showBalance(r.balance);
      poll(r.topup.id, 0);
    } catch (e) {
      $('topup-error').textContent = e.message;
    }
  });

  let currentTopup = null;
  function showInvoice(t) {
    currentTopup = t;
    $('invoice').hidden = false;
    $('inv-sats').textContent = fmt(t.sats);
    $('inv-payloads').textContent = fmt(t.payloads);
    $('inv-bonus').textContent = fmt(t.bonusPayloads);
    $('inv-text').value = t.bolt11 || '';
    const link = 'lightning:' + (t.bolt11 || '');
    $('inv-link').href = link;
    $('inv-open').href = link;
    $('inv-qr').src = '/account/qr.svg?data=' + encodeURIComponent(link);
    $('dev-pay').hidden = !cfg.devPay;
    setStatus(t);
  }

  function setStatus(t) {
    const st = $('inv-status');
    st.textContent = t.status;
    st.className = t.status;
    $('inv-expires').textContent = t.status === 'pending' ? '(expires ' + new Date(t.expiresAt).toLocaleTimeString() + ')' : '';
  }

  function poll(id, n) {
    pollTimer = setTimeout(async () => {
      try {
        const r = await api('GET', '/v1/topups/' + encodeURIComponent(id));
        setStatus(r.topup);
        if (r.topup.status === 'pending') return poll(id, n + 1);
        $('dev-pay').hidden = true;
        showBalance(r.balance);
        await refresh();
      } catch {
        poll(id, n + 1);
      }
    }, Math.min(1000 + n * 250, 5000));
  }

  $('inv-copy').addEventListener('click', () => copy($('inv-text').value, $('inv-copy')));
  $('dev-pay').addEventListener('click', async () => {
    if (!currentTopup) return;
    try {
      const r = await api('POST', '/account/dev-pay', { topupId: currentTopup.id });
      setStatus(r.topup);
      showBalance(r.balance);
      $('dev-pay').hidden = true;
      await refresh();
    } catch (e) {
      $('topup-error').textContent = e.message;
    }
  });

  api('GET', '/account/config').then((c) => {
    cfg = c;
    bonusText();
    // an operator who makes keys by invitation (wallet.keyInviteCodes) asks for the code here
    $('invite-row').hidden = !c.inviteRequired;
  }).catch(() => {});
})();
