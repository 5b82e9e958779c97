package io.zarrshard;

import org.junit.internal.TextListener;
import org.junit.runner.JUnitCore;
import org.junit.runner.Result;

/** Runs every test class and ends with a line {@code N passed, M failed}; exit 1 on failure. */
public final class TestMain {
    static final Class<?>[] CLASSES = {RoundTripTest.class, FixtureTest.class, ErrorTest.class,
        ThrowingIOTest.class, ConcurrencyTest.class, RegionTest.class, HostileInputTest.class,
        RefsTest.class, VerifyTest.class, ListTest.class, NewObjectTest.class,
        DirectoryStoreTest.class, CreateTest.class};

    public static void main(String[] args) {
        JUnitCore core = new JUnitCore();
        core.addListener(new TextListener(System.out));
        Result r = core.run(CLASSES);
        int failed = r.getFailureCount();
        int passed = r.getRunCount() - failed - r.getAssumptionFailureCount();
        if (r.getAssumptionFailureCount() > 0 || r.getIgnoreCount() > 0) {
            System.out.println("skipped: " + (r.getAssumptionFailureCount() + r.getIgnoreCount()));
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
