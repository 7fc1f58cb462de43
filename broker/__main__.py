import sys

from broker.main import main

sys.exit(main())
