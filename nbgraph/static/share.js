var p="This is a shared copy of a run: no kernel runs behind it, so nothing can be answered, forked, resumed or changed here. Open the run in its notebook for that.",f=`
:host {
  display: block;
  color-scheme: light;
  background: var(--jp-layout-color0);
  --jp-ui-font-color1: #1f2328; --jp-ui-font-color2: #59636e; --jp-ui-font-color3: #c6cbd1;
  --jp-layout-color0: #ffffff; --jp-layout-color1: #f6f8fa; --jp-border-color1: #d0d7de;
  --jp-brand-color1: #0969da; --jp-success-color1: #1a7f37; --jp-warn-color1: #9a6700; --jp-error-color1: #cf222e;
}
@media (prefers-color-scheme: dark) {
  :host {
    color-scheme: dark;
    --jp-ui-font-color1: #e6edf3; --jp-ui-font-color2: #9198a1; --jp-ui-font-color3: #6e7681;
    --jp-layout-color0: #0d1117; --jp-layout-color1: #161b22; --jp-border-color1: #3d444d;
    --jp-brand-color1: #4493f8; --jp-success-color1: #3fb950; --jp-warn-color1: #d29922; --jp-error-color1: #f85149;
  }
}
.nbg-controls, .nbg-bp { display: none !important; }
.nbg-share-note { margin: 6px 2px 0; font: 11px system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--jp-ui-font-color2); }
`;function d(e,c){if(Number.isInteger(e.frame))return e.frame;if(typeof e.node=="string")return c.node[e.node];if(Number.isInteger(e.step))return typeof e.where=="string"?c.where[`${e.step} ${e.where}`]:c.step[e.step]}function u(e,{inspections:c,keys:a}){if(e.type==="hello")return null;if(e.type!=="inspect")return{type:"error",message:p};let r=d(e,a),l=Number.isInteger(r)?c[r]:null;if(!l){let o=e.node??(e.where?`${e.step} ${e.where}`:e.step??e.frame);return{type:"error",message:`the shared run has no step ${JSON.stringify(o)} to inspect`}}return l.unavailable?{type:"error",message:l.unavailable}:{type:"inspection",...l}}function h(e,c){let a={...e},r=new Map,l=(o,...t)=>{for(let n of[...r.get(o)||[]])n(...t)};return{get:o=>a[o],set(o,t){a[o]!==t&&(a[o]=t,l(`change:${o}`,t))},on(o,t){for(let n of o.split(/\s+/).filter(Boolean))r.has(n)||r.set(n,new Set),r.get(n).add(t)},off(o,t){if(!o)return r.clear();for(let n of o.split(/\s+/).filter(Boolean))t?r.get(n)?.delete(t):r.delete(n)},save_changes(){},send(o){let t=c(o);t&&queueMicrotask(()=>l("msg:custom",t,[]))}}}function b(e,c){let a=[...document.querySelectorAll("[data-nbgraph-shared]")].find(s=>s.dataset.nbgraphShared===c&&!s.shadowRoot);if(!a)throw new Error(`nbgraph: no element of the shared run ${c} left to draw in`);let r=JSON.parse(a.querySelector('script[type="application/json"]').textContent),l=a.attachShadow({mode:"open"}),o=document.createElement("style");o.textContent=`${r.css}
${f}`;let t=document.createElement("div"),n=document.createElement("p");n.className="nbg-share-note",n.textContent=r.note,l.append(o,t,n);let i=h(r.traits,s=>u(s,r));return e.initialize&&e.initialize({model:i}),e.render({model:i,el:t})}export{p as NO_KERNEL,f as PAGE_CSS,u as answer,d as frameOf,b as mountShared,h as sharedModel};
