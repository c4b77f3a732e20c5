// Validates Kubernetes objects against the OpenAPI schemas of the npm package kubernetes-models
// (generated from a Kubernetes release's API). Reads {"overlay": NAME, "objects": [...]}, one
// JSON document per line, on stdin; prints one line per error naming the overlay, the object and
// the field, and exits 1 if there was any (0 otherwise; 2 for an object of an unknown kind).
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin });
let errors = 0, checked = 0, unknown = 0;
for await (const line of lines) {
  if (!line.trim()) continue;
  const { overlay, objects } = JSON.parse(line);
  for (const object of objects) {
    const name = `${overlay}: ${object.kind}/${object.metadata?.name}`;
    const [group, version] = object.apiVersion.includes("/")
      ? object.apiVersion.split("/") : ["", object.apiVersion];
    const path = group ? `kubernetes-models/${group}/${version}/${object.kind}`
                       : `kubernetes-models/${version}/${object.kind}`;
    let Model;
    try {
      Model = (await import(path))[object.kind];
    } catch (e) {
      console.log(`${name}: no schema for apiVersion ${object.apiVersion} kind ${object.kind}`);
      unknown++;
      continue;
    }
    try {
      new Model(object).validate();
      checked++;
    } catch (e) {
      errors++;
      const details = (e.errors ?? []).map((d) =>
        `${d.instancePath || "/"} ${d.message}${d.params ? " " + JSON.stringify(d.params) : ""}`);
      console.log(`${name}: ${details.length ? details.join("; ") : e.message}`);
    }
  }
}
console.log(`k8s schema: ${checked} objects valid, ${errors} invalid, ${unknown} of unknown kinds`);
process.exit(errors ? 1 : unknown ? 2 : 0);
