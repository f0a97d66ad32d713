// For the Python tests (tests/viewer.py): the figures the app's boxes show (anatomy/viewer/boxes.js) for each view,
// from a JSON file {"data": {"payload", "twin", "walk", "positional", "importance", "explain", "norms"}, "look",
// "views"}; one JSON record per view: {box id: {data, layout}}, and "partial": the output up to the step.
import {readFileSync} from "node:fs";

import {BOXES, fittedView} from "../../anatomy/viewer/boxes.js";
import {setNorms} from "../../anatomy/viewer/weights.js";

const {data, look, views} = JSON.parse(readFileSync(process.argv[2], "utf-8"));
setNorms(data.payload, data.norms);
for (const view of views) {
  const v = data.payload ? fittedView(data.payload, view) : null, out = {view: v};
  for (const [id, box] of Object.entries(BOXES)) {
    if (!box.needs) {
      if (v) out[id] = box.make(v, data, look);
    } else if (data[box.needs]) {
      out[id] = box.make(Object.assign({}, view, {[box.needs]: data[box.needs]}), data, look);
    }
  }
  if (v) out.partial = data.payload.pieces.output.slice(0, v.step);
  console.log(JSON.stringify(out));
}
