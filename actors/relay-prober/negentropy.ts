// NIP-77 negentropy from nostr-tools. The package ships it (lib/esm/nip77.js, the same code its
// NegentropySync uses) but does not list it in its `exports`, so it is loaded from the installed
// package's own directory, found through an export that is listed. Only what the probe uses is typed.
export interface NegentropyStorage {
  insert(timestamp: number, id: string): void;
  seal(): void;
}
export interface NegentropySession {
  initiate(): string;
  /** Hex message to send next, or null when reconciliation is complete. */
  reconcile(msg: string, onhave?: (id: string) => void, onneed?: (id: string) => void): string | null;
}
export interface Nip77 {
  NegentropyStorageVector: new () => NegentropyStorage;
  Negentropy: new (storage: NegentropyStorage, frameSizeLimit?: number) => NegentropySession;
}

let loaded: Promise<Nip77> | null = null;

export function loadNip77(): Promise<Nip77> {
  loaded ??= import(new URL('./nip77.js', import.meta.resolve('nostr-tools/pure')).href) as Promise<Nip77>;
  return loaded;
}
