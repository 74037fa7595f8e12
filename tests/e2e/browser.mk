# Debian's Chromium and chromedriver for the browser end-to-end test (tests/e2e/test_ui.py).
# Included by the Makefile; `make browser` is a no-op where both are already installed. The test
# drives them through Selenium with explicit paths, so nothing is ever downloaded at test time.
# The test reads the same two variables, so pointing them elsewhere moves both.
export AGENTOMNIA_CHROMIUM ?= /usr/bin/chromium
export AGENTOMNIA_CHROMEDRIVER ?= /usr/bin/chromedriver

.PHONY: browser

browser:
	@if [ -x "$(AGENTOMNIA_CHROMIUM)" ] && [ -x "$(AGENTOMNIA_CHROMEDRIVER)" ]; then \
		echo "browser: $$("$(AGENTOMNIA_CHROMIUM)" --version 2>/dev/null) with $$("$(AGENTOMNIA_CHROMEDRIVER)" --version 2>/dev/null | cut -d' ' -f1-2)"; \
	else \
		if [ "$$(id -u)" = 0 ]; then SUDO=; \
		elif command -v sudo >/dev/null; then SUDO=sudo; \
		else echo "browser: $(AGENTOMNIA_CHROMIUM) or $(AGENTOMNIA_CHROMEDRIVER) is missing and installing them needs root:" \
			"run 'apt-get install chromium chromium-driver' as root"; exit 1; fi; \
		command -v apt-get >/dev/null || { echo "browser: no apt-get here; install Chromium and its" \
			"chromedriver, then set AGENTOMNIA_CHROMIUM and AGENTOMNIA_CHROMEDRIVER to their paths"; exit 1; }; \
		export DEBIAN_FRONTEND=noninteractive; \
		$$SUDO apt-get -o DPkg::Lock::Timeout=600 update -q && \
		$$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends chromium chromium-driver; \
	fi
