// What a page of the console is, for the router (main.ts) and the pages alike: its own
// module, so that the pages do not import the router that imports them.

/** A page's refresh: the router polls it while the page is on screen, until it answers
 * false (a finished job). */
export type Tick = () => Promise<boolean | void>;
/** A page: draws into root from the route's params; alive() turns false once the user
 * has moved on. Returns a tick to be polled, or nothing for a page drawn once. */
export type View = (root: HTMLElement, params: string[], alive: () => boolean) => Promise<Tick | void>;
