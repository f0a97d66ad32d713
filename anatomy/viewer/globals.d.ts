// What the viewer's JavaScript meets outside its own modules, for the type check only (`npx tsc`, tsconfig.json):
// the page never loads this file (anatomy/bundle.py follows `import ... from "./x.js"` only).

/** Plotly.js (a classic script: window.Plotly), as much of it as the viewer calls. */
interface PlotlyLike {
  react(gd: HTMLElement, data: object[], layout: object, config?: object): Promise<HTMLElement>;
  relayout(gd: HTMLElement, update: object): Promise<HTMLElement>;
  restyle(gd: HTMLElement, update: object, traces?: number[]): Promise<HTMLElement>;
  toImage(figure: {data: object[], layout: object}, options: object): Promise<string>;
  Plots: {resize(gd: HTMLElement): Promise<HTMLElement>};
  /** screen.js has wrapped react and Plots.resize */
  anatomyWrapped?: boolean;
}

/** A div Plotly has drawn into: Plotly keeps the figure (and its own full one) on the element. */
interface PlotlyDiv extends HTMLElement {
  data: any[];
  layout: any;
  _fullLayout?: any;
  _fullData?: any[];
  on(event: string, handler: (event: any) => void): void;
}

interface Window {
  Plotly?: PlotlyLike;
}
