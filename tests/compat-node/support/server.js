// Starts a real `corvid serve` the way RavenDB's test drivers start Raven.Server: a settings.json passed
// with --config-path, RavenDB-style arguments, the URL read from the `Server available on:` line within
// five seconds. One server per test file (node --test runs each file in its own process).
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DocumentStore, CreateDatabaseOperation, DeleteDatabasesOperation } from "ravendb";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const STARTUP_MS = 5000;

export function corvidBinary() {
    const bin = process.env.CORVID_BIN || join(repoRoot, "target", "release", "corvid");
    if (!existsSync(bin)) {
        throw new Error(`${bin} not found: build it first (cargo build --release) or set CORVID_BIN`);
    }
    return bin;
}

export async function startServer() {
    const dir = mkdtempSync(join(tmpdir(), "corvid-node-"));
    const settings = join(dir, "settings.json");
    writeFileSync(settings, JSON.stringify({ ServerUrl: "http://127.0.0.1:0", "Logs.Mode": "None" }));
    const args = [
        "serve",
        "--config-path", settings,
        "--RunInMemory=true",
        "--License.Eula.Accepted=true",
        "--Setup.Mode=None",
        "--Logs.Mode=None",
        `--Testing.ParentProcessId=${process.pid}`,
        "--ServerUrl=http://127.0.0.1:0",
    ];
    const child = spawn(corvidBinary(), args, { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", d => { stderr = (stderr + d).slice(-20000); });
    const url = await new Promise((resolveUrl, reject) => {
        let out = "";
        const timer = setTimeout(() => reject(new Error(`no 'Server available on:' within ${STARTUP_MS} ms\n${out}\n${stderr}`)), STARTUP_MS);
        child.stdout.on("data", d => {
            out += d;
            const m = /Server available on: (\S+)/.exec(out);
            if (m) {
                clearTimeout(timer);
                resolveUrl(m[1]);
            }
        });
        child.on("exit", code => {
            clearTimeout(timer);
            reject(new Error(`corvid exited with ${code} before it was available\n${out}\n${stderr}`));
        });
    });
    child.stdout.resume();
    const stop = async () => {
        if (child.exitCode !== null) return;
        const exited = new Promise(r => child.once("exit", r));
        child.stdin.write("shutdown no-confirmation\n");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10000);
        await exited;
        clearTimeout(timer);
        rmSync(dir, { recursive: true, force: true });
    };
    return { url, stop, stderr: () => stderr };
}

let counter = 0;

/// A store on a fresh database of `server`; `configure(conventions)` runs before initialize().
export async function newStore(server, configure) {
    const database = `node_${process.pid}_${++counter}`;
    const admin = new DocumentStore(server.url, database);
    admin.initialize();
    await admin.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
    admin.dispose();
    const store = new DocumentStore(server.url, database);
    if (configure) configure(store.conventions);
    store.initialize();
    return store;
}

export async function dropStore(store) {
    await store.maintenance.server.send(new DeleteDatabasesOperation({ databaseNames: [store.database], hardDelete: true }));
    store.dispose();
}

/// Waits until no index of the store's database is stale.
export async function waitForIndexing(store, timeoutMs = 15000) {
    const { GetStatisticsOperation } = await import("ravendb");
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const stats = await store.maintenance.send(new GetStatisticsOperation());
        const errored = stats.indexes.find(i => i.state === "Error");
        if (errored) throw new Error(`index ${errored.name} is errored`);
        if (stats.indexes.every(i => !i.isStale && !i.name.startsWith("ReplacementOf/"))) return;
        if (Date.now() > deadline) throw new Error("indexes still stale after " + timeoutMs + " ms");
        await new Promise(r => setTimeout(r, 50));
    }
}

/// Collects a readable stream's items (and its "stats" event, if any).
export function collect(stream) {
    return new Promise((resolveItems, reject) => {
        const items = [];
        let stats = null;
        stream.on("data", d => items.push(d));
        stream.on("stats", s => { stats = s; });
        stream.on("error", reject);
        stream.on("end", () => resolveItems({ items, stats }));
    });
}
