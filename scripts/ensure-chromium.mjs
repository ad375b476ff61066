// Before `npm test` (and in CI's set-up): the browser tests need Debian's Chromium headless shell
// (Playwright's own download does not work on our machines; the shell is what Playwright itself
// runs headless tests on, and costs half the CPU of the whole browser's headless mode:
// playwright.config.ts). Install it when missing and we are root on Debian;
// otherwise say how. apt's output (some 500 lines) goes to a log file; the terminal gets one line
// before, saying what is done and where the log is, and one after, naming every package that was
// already installed and is upgraded because Chromium's libraries need a newer version (apt-get
// install upgrades nothing else: no `apt-get upgrade`, and `--no-upgrade` keeps an installed
// package as it is).
import { execFileSync } from "node:child_process";
import { existsSync, openSync, closeSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const PACKAGE = "chromium-headless-shell";
// What Chromium needs and nothing it merely recommends: Debian's recommends for it are a desktop's
// (udev, upower, a printer dialog with CUPS, Samba and Perl's web stack, Mesa's GPU drivers,
// notifications), 104 packages among them systemd upgraded, none of which a headless browser with
// --disable-gpu uses. The one recommend a page's rendering uses, the Liberation fonts (metrics of
// Arial, Times and Courier), is named.
const INSTALL = ["--no-upgrade", "--no-install-recommends", PACKAGE, "fonts-liberation"];
const wanted = process.env.CHROMIUM_PATH || `/usr/bin/${PACKAGE}`;
if (!existsSync(wanted)) {
  const canInstall = process.getuid?.() === 0 && existsSync("/usr/bin/apt-get") && !process.env.CHROMIUM_PATH;
  if (!canInstall) {
    console.error(`No Chromium at ${wanted}: install Debian's headless shell (sudo apt-get install -y ${PACKAGE}) or set CHROMIUM_PATH to a Chromium binary.`);
    process.exit(1);
  }
  const log = path.join(process.env.TMPDIR || tmpdir(), "city-apt-chromium.log");
  console.log(
    `Installing Debian's Chromium headless shell for the browser tests (apt-get update, then apt-get install ${PACKAGE} with its libraries and fonts; apt's output in ${log}) ...`,
  );
  const fd = openSync(log, "w");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  try {
    execFileSync("apt-get", ["update"], { stdio: ["ignore", fd, fd], env });
    // What apt is about to do, first: the installed packages it upgrades ("Inst name [old] (new ...").
    const plan = execFileSync("apt-get", ["install", "-s", ...INSTALL], { env, encoding: "utf8" });
    const upgraded = [...plan.matchAll(/^Inst (\S+) \[([^\]]+)\] \((\S+)/gm)].map(([, name, from, to]) => `${name} ${from} -> ${to}`);
    const added = [...plan.matchAll(/^Inst (\S+) \(/gm)].length;
    execFileSync("apt-get", ["install", "-y", ...INSTALL], { stdio: ["ignore", fd, fd], env });
    console.log(
      `Chromium's headless shell installed: ${added} new package${added === 1 ? "" : "s"}` +
        (upgraded.length
          ? `; ${upgraded.length} installed packages upgraded, as Chromium's libraries need them: ${upgraded.join(", ")}`
          : "; nothing else upgraded"),
    );
  } catch (error) {
    closeSync(fd);
    console.error(`Installing Chromium failed (${error.message.split("\n")[0]}); the end of apt's output (${log}):`);
    console.error(readFileSync(log, "utf8").split("\n").slice(-30).join("\n"));
    process.exit(1);
  }
  closeSync(fd);
}
