// Route audit: every endpoint the official Node.js client's commands build (read from the installed package's
// compiled source) is answered by Corvid with a real handler or RavenDB's NotSupportedException, never
// RouteNotFoundException.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, newStore, dropStore } from "../support/server.js";

const here = dirname(fileURLToPath(import.meta.url));
const clientDist = resolve(here, "..", "node_modules", "ravendb", "dist", "commonjs");

function jsFiles(dir) {
    return readdirSync(dir).flatMap(name => {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) return jsFiles(path);
        return name.endsWith(".js") ? [path] : [];
    });
}

// `${node.url}/databases/${node.database}/x?…` or node.url + "/databases/" + node.database + "/x?…" → /databases/DB/x
function pathOf(expression) {
    let text;
    const template = expression.match(/^`([^`]*)`/);
    if (template) {
        text = template[1];
    } else {
        text = expression
            .split("+")
            .map(part => part.trim())
            .map(part => (/^"[^"]*"$/.test(part) ? part.slice(1, -1) : part === "node.database" ? "${node.database}" : part === "node.url" ? "${node.url}" : "${x}"))
            .join("");
    }
    if (!text.startsWith("${node.url}/")) return null;
    text = text.slice("${node.url}".length).split("?")[0];
    if (text.endsWith("}")) return null; // completed elsewhere
    return text.replace(/\$\{node\.database\}/g, "DB").replace(/\$\{[^}]*\}/g, "x");
}

function clientRoutes() {
    const routes = new Map();
    for (const file of jsFiles(clientDist)) {
        const source = readFileSync(file, "utf8");
        for (const block of source.split(/createRequest\s*\(/).slice(1)) {
            const body = block.split(/\n    [a-zA-Z_]+\s*\(/)[0];
            const uri = body.match(/uri\s*=\s*([^;]+);/);
            if (!uri) continue;
            const path = pathOf(uri[1].trim());
            if (!path) continue;
            const method = (body.match(/method:\s*"([A-Z]+)"/) || [null, "GET"])[1];
            routes.set(`${method} ${path}`, { method, path, file: file.slice(clientDist.length + 1) });
        }
    }
    return [...routes.values()];
}

let server, store;
before(async () => {
    server = await startServer();
    store = await newStore(server);
});
after(async () => {
    await dropStore(store);
    await server.stop();
});

test("no endpoint of the Node.js client's commands is unknown to the server", async () => {
    const routes = clientRoutes();
    // The client builds ~150 such requests; far fewer means the extraction no longer matches its source.
    assert.ok(routes.length >= 80, `only ${routes.length} routes read from the client`);
    const unknown = [];
    for (const { method, path, file } of routes) {
        const url = server.url + path.replace("/DB/", `/${store.database}/`).replace(/\/DB$/, `/${store.database}`);
        const response = await fetch(url, {
            method,
            body: ["GET", "HEAD"].includes(method) ? undefined : "{}",
            headers: { "Content-Type": "application/json" },
        });
        const text = method === "HEAD" ? "" : await response.text();
        if (text.includes("RouteNotFoundException")) unknown.push(`${method} ${path} (${file}) -> ${response.status}`);
    }
    assert.deepEqual(unknown, []);
});
