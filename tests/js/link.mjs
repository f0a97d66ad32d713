// For tests/test_links.py: a link's view as anatomy/viewer/link.js reads it against a trace payload, for each query
// of a JSON file {"payload", "queries"}; one JSON record per query.
import {readFileSync} from "node:fs";

import {readView, shapeOf} from "../../anatomy/viewer/link.js";

const {payload, queries} = JSON.parse(readFileSync(process.argv[2], "utf-8"));
for (const query of queries) console.log(JSON.stringify(readView(query, shapeOf(payload))));
