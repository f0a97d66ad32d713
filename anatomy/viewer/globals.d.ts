// What the viewer's JavaScript meets outside its own modules, for the type check only (`npx tsc`, tsconfig.json):
// the page never loads this file (anatomy/bundle.py follows `import ... from "./x.js"` only).

/** Plotly.js (a classic script: window.Plotly), as much of it as the viewer calls. */
interface PlotlyLike {
  react(gd: PlotlyDiv, data: object[], layout: object, config?: object): Promise<PlotlyDiv>;
  relayout(gd: PlotlyDiv, update: object): Promise<PlotlyDiv>;
  restyle(gd: PlotlyDiv, update: object, traces?: number[]): Promise<PlotlyDiv>;
  toImage(figure: {data: object[], layout: object}, options: object): Promise<string>;
  Plots: {resize(gd: PlotlyDiv): Promise<PlotlyDiv>};
  /** screen.js has wrapped react and Plots.resize */
  anatomyWrapped?: boolean;
}

/** A div Plotly draws into: once drawn, Plotly keeps the figure (and its own full one) on the element. */
interface PlotlyDiv extends HTMLElement {
  data?: any[];
  layout?: any;
  _fullLayout?: any;
  _fullData?: any[];
  on?(event: string, handler: (event: any) => void): void;
}

interface Window {
  Plotly?: PlotlyLike;
}
